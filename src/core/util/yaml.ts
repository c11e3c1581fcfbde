// The `yaml` package, loaded on first use (a lazy bundle under dist/sdk/, like the provider
// SDKs): the one place that imports it, for frontmatter and declarative tool files alike.

export type YamlModule = typeof import('yaml');

let loading: Promise<YamlModule> | undefined;

export function loadYaml(): Promise<YamlModule> {
  loading ??= import('yaml').then((mod) => {
    // The CommonJS package's exports, whether Node or a bundle did the import.
    const withDefault = mod as YamlModule & { default?: YamlModule };
    return typeof withDefault.parse === 'function' ? withDefault : (withDefault.default ?? mod);
  });
  return loading;
}
