// The `yaml` package, loaded on first use (a lazy bundle under dist/sdk/, like the provider
// SDKs): the one place that imports it, for frontmatter and declarative tool files alike. The
// module system keeps what it loaded, so asking again costs a resolved promise.

export type YamlModule = typeof import('yaml');

export async function loadYaml(): Promise<YamlModule> {
  const mod = await import('yaml');
  // The CommonJS package's exports, whether Node or a bundle did the import.
  const withDefault = mod as YamlModule & { default?: YamlModule };
  return typeof withDefault.parse === 'function' ? withDefault : (withDefault.default ?? mod);
}
