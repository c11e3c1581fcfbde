// Types of scripts/screenshots/ansi-svg.mjs, for the unit test that imports it.
export interface Cell {
  text: string;
  width: 1 | 2;
  fg: string;
  bg: string;
  bold: boolean;
  italic: boolean;
  underline: boolean;
  strike: boolean;
}

export interface GridOptions {
  columns: number;
  rows: number;
  foreground: string;
  background: string;
}

export interface SvgOptions extends GridOptions {
  title?: string;
  cursor?: { x: number; y: number };
  fontSize?: number;
}

export function escapeXml(text: string): string;
export function cellWidth(grapheme: string): 0 | 1 | 2;
export function parseCapture(capture: string, options: GridOptions): Cell[][];
export function ansiToSvg(capture: string, options: SvgOptions): string;
