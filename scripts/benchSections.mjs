// docs/benchmarks.md is written by more than one script: scripts/bench.mjs rewrites the whole file, other bench scripts
// (scripts/benchMapSchedule.mjs) own a section between markers `<!-- NAME:begin … -->` and `<!-- NAME:end -->`. These
// two functions keep every script's numbers when another one runs (test/unit/benchSections.test.ts).

const SECTION = /<!-- ([a-z-]+):begin[^]*?<!-- \1:end -->/g;

/** The marked sections of `text`, in their order, joined by a blank line ('' when there are none). */
export function keptSections(text) {
	return (text.match(SECTION) ?? []).join('\n\n');
}

/** `body` (the whole file bench.mjs generates) followed by the marked sections of `previous` (the file it replaces). */
export function withKeptSections(body, previous) {
	const kept = keptSections(previous ?? '');
	return kept ? `${body.trimEnd()}\n\n${kept}\n` : body;
}

/** `text` with the section between `begin` and `end` (both included) replaced by `section`, or `section` appended. */
export function replaceSection(text, begin, end, section) {
	const b = text.indexOf(begin);
	const e = b >= 0 ? text.indexOf(end, b) : -1;
	return b >= 0 && e > b ? `${text.slice(0, b)}${section}${text.slice(e + end.length)}` : `${text.trimEnd()}\n\n${section}\n`;
}
