// What every benchmark shares: its Neovim lane and the `metric value unit` lines it prints.

export interface Lane {
  lane: string;
  bin: string;
  version: string;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? NaN;
}

export function report(metric: string, value: number, unit: string, digits = 1): void {
  process.stdout.write(`${metric} ${value.toFixed(digits)} ${unit}\n`);
}

export function median(samples: number[]): number {
  return percentile(samples, 50);
}
