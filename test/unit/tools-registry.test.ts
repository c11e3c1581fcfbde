import { beforeAll, describe, expect, it } from 'vitest';
import {
  ToolRegistry,
  ToolRegistryError,
  canonicalSchema,
  editDistance,
  type ToolDefinition,
} from '../../src/core/tools/registry.js';
import { SchemaValidator, type ValidationResult } from '../../src/core/tools/validate.js';

// One validator for the file, as the host keeps one.
const validator = new SchemaValidator();
const validateInput = (def: ToolDefinition, input: unknown): ValidationResult =>
  validator.validateInput(def, input);
const schemaProblem = (schema: Record<string, unknown>): string | undefined =>
  validator.schemaProblem(schema);
import {
  calculatorAsyncTool,
  calculatorTool,
} from '../../src/core/tools/definitions/calculator.js';

const tool = (name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: 'object', properties: {} },
  ...extra,
});

describe('ToolRegistry', () => {
  it('registers, looks up, counts and unregisters', () => {
    const r = new ToolRegistry();
    expect(r.count()).toBe(0);
    r.register(tool('read'));
    r.register(tool('mcp:slack:post'));
    expect(r.count()).toBe(2);
    expect(r.has('read')).toBe(true);
    expect(r.get('read')?.description).toBe('the read tool');
    expect(r.get('nope')).toBeUndefined();
    expect(r.unregister('read')).toBe(true);
    expect(r.unregister('read')).toBe(false);
    expect(r.has('read')).toBe(false);
    expect(r.count()).toBe(1);
  });

  it('replaces a tool registered again under the same name', () => {
    const r = new ToolRegistry();
    r.register(tool('bash', { description: 'old' }));
    r.register(tool('bash', { description: 'new', strict: true }));
    expect(r.count()).toBe(1);
    expect(r.get('bash')?.description).toBe('new');
    expect(r.specs()).toEqual([
      {
        name: 'bash',
        description: 'new',
        inputSchema: { type: 'object', properties: {} },
        strict: true,
      },
    ]);
  });

  it('rejects bad names and definitions with a clear error', () => {
    const r = new ToolRegistry();
    for (const name of ['', 'has space', 'slash/name', 'ünïcode', 'semi;colon']) {
      expect(() => {
        r.register(tool(name));
      }).toThrow(ToolRegistryError);
    }
    expect(() => {
      r.register(tool('bad name'));
    }).toThrow(/Invalid tool name 'bad name'.*letters, digits/);
    for (const name of ['a', 'file.read', 'mcp:github:create_issue', 'x-y_Z9']) {
      r.register(tool(name));
    }
    expect(r.count()).toBe(4);
    expect(() => {
      r.register({
        name: 'x',
        description: 'd',
        inputSchema: [] as unknown as Record<string, unknown>,
      });
    }).toThrow(/inputSchema must be a JSON Schema object/);
    expect(() => {
      r.register({ name: 'x', inputSchema: {} } as unknown as ToolDefinition);
    }).toThrow(/description must be a string/);
  });

  it('lists and builds specs sorted by name; only enabled tools by default', () => {
    const r = new ToolRegistry();
    r.register(tool('write'));
    r.register(tool('Zeta'));
    r.register(tool('bash'));
    r.register(tool('calculator_async', { enabled: false }));
    r.register(tool('calculator', { enabled: true }));
    expect(r.list().map((t) => t.name)).toEqual([
      'Zeta',
      'bash',
      'calculator',
      'calculator_async',
      'write',
    ]);
    expect(r.specs().map((s) => s.name)).toEqual(['Zeta', 'bash', 'calculator', 'write']);
  });

  it('builds specs for the named tools only, disabled included, unknown ignored', () => {
    const r = new ToolRegistry();
    r.register(tool('write'));
    r.register(tool('bash'));
    r.register(tool('calculator_async', { enabled: false }));
    expect(r.specs(['write', 'nope', 'calculator_async', 'write']).map((s) => s.name)).toEqual([
      'calculator_async',
      'write',
    ]);
    expect(r.specs([])).toEqual([]);
  });

  it('omits strict when unset and sorts schema properties and required at all depths', () => {
    const r = new ToolRegistry();
    const inputSchema = {
      type: 'object',
      properties: {
        path: { type: 'string' },
        label: { type: 'string' },
        opts: {
          type: 'object',
          properties: { z: { type: 'number' }, a: { type: 'number' } },
          required: ['z', 'a'],
        },
      },
      required: ['path', 'label', 'opts'],
      additionalProperties: false,
    };
    r.register({ name: 'read', description: 'd', inputSchema });
    const [spec] = r.specs();
    expect(spec).toBeDefined();
    expect(spec && 'strict' in spec).toBe(false);
    expect(JSON.stringify(spec?.inputSchema)).toBe(
      JSON.stringify({
        type: 'object',
        properties: {
          label: { type: 'string' },
          opts: {
            type: 'object',
            properties: { a: { type: 'number' }, z: { type: 'number' } },
            required: ['a', 'z'],
          },
          path: { type: 'string' },
        },
        required: ['label', 'opts', 'path'],
        additionalProperties: false,
      }),
    );
    // The definition's own schema is left untouched.
    expect(Object.keys(inputSchema.properties)).toEqual(['path', 'label', 'opts']);
    expect(inputSchema.required).toEqual(['path', 'label', 'opts']);
  });

  it('canonicalSchema keeps a property that happens to be called "required" or "properties"', () => {
    const schema = {
      type: 'object',
      properties: { required: { type: 'boolean' }, properties: { type: 'string' } },
      required: ['required', 'properties'],
    };
    expect(canonicalSchema(schema)).toEqual({
      type: 'object',
      properties: { properties: { type: 'string' }, required: { type: 'boolean' } },
      required: ['properties', 'required'],
    });
  });

  it('suggests the closest name for a typo', () => {
    const r = new ToolRegistry();
    for (const name of [
      'bash',
      'calculator',
      'calculator_async',
      'read',
      'write',
      'mcp:slack:post',
    ]) {
      r.register(tool(name));
    }
    const typed = ['calculater', 'Calculator', 'calculator-async', 'raed', 'bsh', 'post'];
    expect(typed.map((name) => r.suggest(name))).toEqual([
      'calculator',
      'calculator',
      'calculator_async',
      'read',
      'bash',
      'mcp:slack:post',
    ]);
    expect(r.suggest('kubernetes')).toBeUndefined();
    expect(r.suggest('read')).toBeUndefined();
    expect(new ToolRegistry().suggest('read')).toBeUndefined();
  });

  it('editDistance counts edits, adjacent swaps as one', () => {
    expect(editDistance('', '')).toBe(0);
    expect(editDistance('abc', '')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('flaw', 'lawn')).toBe(2);
    expect(editDistance('raed', 'read')).toBe(1);
    expect(editDistance('ab', 'ba')).toBe(1);
    expect(editDistance('ca', 'abc')).toBe(3);
  });
});

describe('validateInput', () => {
  beforeAll(() => validator.load());
  const def = (inputSchema: Record<string, unknown>, name = 'calculator'): ToolDefinition => ({
    name,
    description: 'd',
    inputSchema,
  });

  it('accepts valid input', () => {
    expect(validateInput(calculatorTool, { expression: '1+1' })).toEqual({ ok: true });
    expect(validateInput(calculatorTool, { expression: '1+1', label: 'sum' })).toEqual({
      ok: true,
    });
    expect(validateInput(calculatorAsyncTool, { expression: '1', delay: null })).toEqual({
      ok: true,
    });
  });

  it('reports a missing field', () => {
    expect(validateInput(calculatorTool, {})).toEqual({
      ok: false,
      message: "Invalid input for tool 'calculator': must have required property 'expression'",
    });
  });

  it('reports a wrong type, every problem in one paragraph', () => {
    expect(validateInput(calculatorTool, { expression: 42 })).toEqual({
      ok: false,
      message: "Invalid input for tool 'calculator': /expression must be string",
    });
    const result = validateInput(calculatorAsyncTool, { delay: 'soon', label: 3 });
    expect(result.ok).toBe(false);
    const message = result.ok ? '' : result.message;
    expect(message).toMatch(/^Invalid input for tool 'calculator_async': /);
    expect(message).toContain("must have required property 'expression'");
    expect(message).toContain('/delay must be number or null');
    expect(message).toContain('/label must be string');
    expect(message).not.toContain('\n');
    expect(validateInput(calculatorTool, 'just a string')).toEqual({
      ok: false,
      message: "Invalid input for tool 'calculator': must be object",
    });
  });

  it('reports an extra property by name', () => {
    expect(validateInput(calculatorTool, { expression: '1', precision: 3 })).toEqual({
      ok: false,
      message: "Invalid input for tool 'calculator': must NOT have additional property 'precision'",
    });
  });

  it('lists allowed enum values and nested paths', () => {
    const d = def({
      type: 'object',
      properties: {
        mode: { enum: ['fast', 'slow'] },
        items: { type: 'array', items: { type: 'integer', minimum: 0 } },
      },
    });
    const r = validateInput(d, { mode: 'medium', items: [1, -2, 1.5] });
    expect(r).toEqual({
      ok: false,
      message:
        'Invalid input for tool \'calculator\': /mode must be one of "fast", "slow"; /items/1 must be >= 0; /items/2 must be integer',
    });
  });

  it('turns a broken schema into a message instead of throwing', () => {
    const broken = def({ type: 'object', properties: { x: { type: 'strnig' } } }, 'broken');
    const r = validateInput(broken, { x: 1 });
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toMatch(/^Tool 'broken' has an invalid input schema/);
    expect(schemaProblem(broken.inputSchema)).toBeDefined();
    const badRef = def({ type: 'object', properties: { x: { $ref: '#/nowhere' } } }, 'ref');
    expect(validateInput(badRef, {}).ok).toBe(false);
    const notObject = def(null as unknown as Record<string, unknown>, 'null');
    expect(validateInput(notObject, {})).toEqual({
      ok: false,
      message: "Tool 'null' has an invalid input schema: it must be a JSON Schema object",
    });
  });

  it('tolerates unknown keywords, formats, $schema 2020-12 and shared $id', () => {
    const a = def({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'urn:same',
      type: 'object',
      properties: { url: { type: 'string', format: 'uri', 'x-custom': true } },
      required: ['url'],
    });
    const b = def({ $id: 'urn:same', type: 'object', required: ['y'] }, 'other');
    expect(validateInput(a, { url: 'not a uri, formats are not checked' })).toEqual({ ok: true });
    expect(validateInput(b, {})).toEqual({
      ok: false,
      message: "Invalid input for tool 'other': must have required property 'y'",
    });
    expect(validateInput(a, {}).ok).toBe(false);
  });

  it('reuses the compiled validator for the same schema object', () => {
    const schema = { type: 'object', required: ['q'] };
    const d = def(schema, 'cached');
    expect(validateInput(d, {}).ok).toBe(false);
    expect(validateInput(d, { q: 1 }).ok).toBe(true);
    expect(validateInput({ ...d, name: 'alias' }, {})).toEqual({
      ok: false,
      message: "Invalid input for tool 'alias': must have required property 'q'",
    });
  });
});
