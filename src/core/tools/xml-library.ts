// The XML library XML tool calling uses (fast-xml-parser, loaded on first use) and the helpers
// its parts share (xml.ts, xml-extract.ts).

/** The parts of fast-xml-parser this module uses. */
export interface XmlLibrary {
  XMLParser: new (options: Record<string, unknown>) => { parse(xml: string): unknown };
  XMLValidator: { validate(xml: string): true | { err: { msg: string; line: number } } };
  XMLBuilder: new (options: Record<string, unknown>) => { build(value: unknown): string };
}

/**
 * fast-xml-parser, loaded on first use (it is not part of the host's start-up bundle; the module
 * system keeps it once loaded).
 */
export async function loadXml(): Promise<XmlLibrary> {
  const m = (await import('fast-xml-parser')) as unknown as Partial<XmlLibrary> & {
    default?: XmlLibrary;
  };
  return (m.XMLParser === undefined && m.default !== undefined ? m.default : m) as XmlLibrary;
}

export function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return asRecord(value) !== undefined;
}

/** The type a JSON Schema gives a value (the first non-null one of a list). */
export function typeOf(schema: Record<string, unknown>): string | undefined {
  const type = schema['type'];
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.find((t) => t !== 'null') as string | undefined;
  if (schema['properties'] !== undefined) return 'object';
  return undefined;
}
