import { describe, expect, it } from 'vitest';
import { HOOK_NAMES, hookPattern, isHookName } from '../../src/core/hooks.js';

describe('hook names', () => {
  it('derive the User autocmd pattern by TitleCasing each word', () => {
    expect(hookPattern('request:sending')).toBe('FlemmaRequestSending');
    expect(hookPattern('tool-use:completed')).toBe('FlemmaToolUseCompleted');
    expect(hookPattern('autopilot:resume-scheduled')).toBe('FlemmaAutopilotResumeScheduled');
    expect(hookPattern('boot:complete')).toBe('FlemmaBootComplete');
  });

  it('list the fifteen events of the specification, each well-formed and unique', () => {
    expect(HOOK_NAMES).toHaveLength(15);
    expect(new Set(HOOK_NAMES.map(hookPattern)).size).toBe(15);
    for (const name of HOOK_NAMES) expect(isHookName(name)).toBe(true);
    expect(isHookName('Request:Sending')).toBe(false);
    expect(isHookName('sending')).toBe(false);
  });
});
