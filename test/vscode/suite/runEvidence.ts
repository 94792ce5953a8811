/**
 * What a failed reproducer trial leaves for the one who reads a red CI log: the first trial that is not "correct",
 * with its command, exit code, duration, evidence lines and the tail of its raw output (the launcher's and the
 * ranks' own messages). Used in assertion messages, so a failure prints what is needed to find its cause.
 */
import type { IpcVariantResult } from '../../../extension/shared/reproSchema';

export function firstBadRun(runs: readonly IpcVariantResult[], tailChars = 3000): string {
	const bad = runs.find(r => r.outcome !== 'correct');
	if (!bad) { return 'every trial correct'; }
	return [
		`${runs.filter(r => r.outcome !== 'correct').length} of ${runs.length} trials not correct; first: ${bad.variant} trial ${bad.trial} (${bad.config}): ${bad.outcome}: ${bad.detail}`,
		`command: ${bad.command.join(' ')}`,
		`exit ${bad.exitCode} after ${bad.durationMs} ms; ranks seen: ${bad.ranks.map(r => `${r.rank}@${r.host}`).join(', ') || 'none'}`,
		`evidence: ${bad.evidence.slice(0, 8).join(' / ') || 'none'}`,
		`--- output tail ---\n${bad.log.slice(-tailChars)}`,
	].join('\n');
}
