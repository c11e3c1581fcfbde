// Timing marks for profiling the host, off unless `FLEMMA_TRACE` names a file: each mark is one
// line `<ms since start> <label>` appended to it. Used to find where a benchmark's time goes.
// NOTE: the global `performance`, which Node loads on first use (`node:perf_hooks`, ≈ 0.5 ms): the
// host's start does not touch it unless tracing (docs/testing.md, "Where the time goes").
import { appendFileSync } from 'node:fs';

const target = process.env['FLEMMA_TRACE'];

// Garbage collections (with their length), and when the HTTP client writes a request (Node's
// fetch publishes it).
if (target !== undefined && target !== '') {
  void import('node:perf_hooks').then(({ PerformanceObserver }) => {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        appendTrace(
          entry.startTime,
          `gc ${entry.duration.toFixed(2)} ${String(process.pid)} ${String((entry as { detail?: { kind?: number } }).detail?.kind)}`,
        );
      }
    }).observe({ entryTypes: ['gc'] });
  });
  void import('node:diagnostics_channel').then((dc) => {
    dc.subscribe('undici:client:sendHeaders', () => {
      trace('http:headers-sent');
    });
  });
}

// The monotonic clock (µs) at a known epoch time, to place a CPU profile's samples among the marks.
if (target !== undefined && target !== '') {
  try {
    appendFileSync(
      target,
      `${(performance.timeOrigin + performance.now()).toFixed(2)} clock ${String(process.hrtime.bigint() / 1000n)}\n`,
    );
  } catch {
    // Profiling only.
  }
}

function appendTrace(at: number, label: string): void {
  try {
    appendFileSync(target ?? '', `${(performance.timeOrigin + at).toFixed(2)} ${label}\n`);
  } catch {
    // Profiling only.
  }
}

export function trace(label: string): void {
  if (target === undefined || target === '') return;
  try {
    appendFileSync(target, `${(performance.timeOrigin + performance.now()).toFixed(2)} ${label}\n`);
  } catch {
    // Profiling only; never disturb the host.
  }
}
