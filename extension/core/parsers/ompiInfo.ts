/**
 * Parser for `ompi_info` output, both `--parsable --all` (`mca:pml:ucx:param:pml_ucx_tls:value:...`) and the plain
 * human format (`MCA pml: ucx (MCA v2.1.0, ...)`, `Open MPI: 5.0.10`), including plain text that went through a
 * mail archive (blank lines between entries, long entries wrapped onto continuation lines).
 */
import type { Evidence } from '../../shared/report';
import type { McaComponent, McaParam, OpenMpiFacts, ParseIssue } from '../facts';
import { issue, lineEvidence, looksBinary, NumberedLine, splitConfigureArgs, splitLines, firstLineEvidence } from './text';

/** Result of parsing one ompi_info output. */
export interface OmpiInfoResult { facts: OpenMpiFacts | null; issues: ParseIssue[] }

const PARAM_RE = /^mca:([^:]+):([^:]+):param:([^:]+):(value|source):(.*)$/;
const COMPONENT_RE = /^mca:([^:]+):([^:]+):version:"component:([^"]*)"/;
const PARSABLE_KEY_RE = /^[A-Za-z][A-Za-z0-9_-]*:/;

function emptyOpenMpi(format: 'parsable' | 'plain'): OpenMpiFacts {
	return {
		format, version: null, ident: null, prefix: null, pkglibdir: null, builtWithCuda: null, builtWithCudaBasis: null,
		configureLine: null, configuredWithCuda: null, configuredWithUcx: null, mpiExtensions: null,
		components: [], params: {},
	};
}

/** Decide the format from the first lines that say something. */
function detectFormat(lines: NumberedLine[]): 'parsable' | 'plain' | null {
	for (const l of lines.slice(0, 400)) {
		if (/^(ompi:version:full:|ident:|mca:[^:]+:[^:]+:|package:)/.test(l.text)) { return 'parsable'; }
		if (/^\s*(Open MPI|Package|Ident string|MCA [A-Za-z0-9_]+)\s*:/.test(l.text)) { return 'plain'; }
	}
	return null;
}

/** Fill the configure-derived facts from the physical lines that make up the configure command line. */
function applyConfigure(f: OpenMpiFacts, source: string, physical: NumberedLine[], joined: string): void {
	const first = physical[0];
	f.configureLine = { value: joined, evidence: lineEvidence(source, first) };
	for (const arg of splitConfigureArgs(joined)) {
		const where = physical.find((p) => p.text.includes(arg)) ?? first;
		if (/^--with-cuda(=|$)/.test(arg) && !f.configuredWithCuda) {
			f.configuredWithCuda = { value: arg, evidence: lineEvidence(source, where) };
		} else if (/^--with-ucx(=|$)/.test(arg) && !f.configuredWithUcx) {
			f.configuredWithUcx = { value: arg, evidence: lineEvidence(source, where) };
		}
	}
}

function parseParsable(lines: NumberedLine[], source: string, issues: ParseIssue[]): OpenMpiFacts {
	const f = emptyOpenMpi('parsable');
	const unknown: NumberedLine[] = [];
	for (const l of lines) {
		const t = l.text;
		if (t === '') { continue; }
		if (!PARSABLE_KEY_RE.test(t)) { unknown.push(l); continue; }
		const pm = PARAM_RE.exec(t);
		if (pm) {
			const [, framework, component, name, kind, rest] = pm;
			const existing = f.params[name];
			if (kind === 'value') {
				if (!existing) {
					f.params[name] = { name, framework, component, value: rest, source: '', evidence: lineEvidence(source, l), sourceEvidence: null };
				}
			} else if (existing && existing.sourceEvidence === null) {
				existing.source = rest;
				existing.sourceEvidence = lineEvidence(source, l);
			}
			continue;
		}
		const cm = COMPONENT_RE.exec(t);
		if (cm) {
			f.components.push({ framework: cm[1], name: cm[2], version: cm[3], evidence: lineEvidence(source, l) });
			continue;
		}
		if (t.startsWith('ompi:version:full:') && !f.version) {
			f.version = { value: t.slice('ompi:version:full:'.length).trim(), evidence: lineEvidence(source, l) };
		} else if (t.startsWith('ident:') && !f.ident) {
			f.ident = { value: t.slice(6).trim(), evidence: lineEvidence(source, l) };
		} else if (t.startsWith('path:prefix:') && !f.prefix) {
			f.prefix = { value: t.slice('path:prefix:'.length).trim(), evidence: lineEvidence(source, l) };
		} else if (t.startsWith('path:pkglibdir:') && !f.pkglibdir) {
			f.pkglibdir = { value: t.slice('path:pkglibdir:'.length).trim(), evidence: lineEvidence(source, l) };
		} else if (t.startsWith('config:cli:') && !f.configureLine) {
			applyConfigure(f, source, [l], t.slice('config:cli:'.length).trim());
		} else if (t.startsWith('options:mpi_ext:') && !f.mpiExtensions) {
			f.mpiExtensions = { value: t.slice('options:mpi_ext:'.length).trim(), evidence: lineEvidence(source, l) };
		}
	}
	for (const name of ['mpi_built_with_cuda_support', 'opal_built_with_cuda_support']) {
		const p = f.params[name];
		if (p && !f.builtWithCuda) {
			f.builtWithCuda = { value: p.value.trim() === 'true' || p.value.trim() === '1', evidence: p.evidence };
			f.builtWithCudaBasis = 'parameter';
		}
	}
	if (unknown.length > 0) {
		issues.push(issue(source, 'info',
			`${unknown.length} line(s) of ompi_info --parsable output were not in the key:value format and were skipped.`,
			unknown.slice(0, 3).map((u) => lineEvidence(source, u))));
	}
	return f;
}

/** One logical entry of the plain format: key, value (continuations joined) and its physical lines. */
interface PlainEntry { key: string; value: string; lines: NumberedLine[] }

const PLAIN_KEY_RE = /^\s*([A-Za-z][A-Za-z0-9 _.,#/+()"=-]*?)\s*:(?:\s+(.*))?$/;

function openParens(s: string): number {
	let n = 0;
	for (const c of s) { if (c === '(') { n++; } else if (c === ')') { n--; } }
	return n;
}

/** Group physical lines into entries; lines that are not `Key: value`, or that follow an unclosed "(", continue the previous entry. */
function plainEntries(lines: NumberedLine[]): { entries: PlainEntry[]; orphans: NumberedLine[] } {
	const entries: PlainEntry[] = [];
	const orphans: NumberedLine[] = [];
	for (const l of lines) {
		if (l.text.trim() === '') { continue; }
		const prev = entries.length > 0 ? entries[entries.length - 1] : undefined;
		const m = PLAIN_KEY_RE.exec(l.text);
		const continuesPrev = prev !== undefined && (
			!m || openParens(prev.value) > 0 ||
			(prev.key === 'Configure command line' && /^\s*'/.test(l.text)));
		if (continuesPrev && prev) {
			prev.value = `${prev.value} ${l.text.trim()}`.trim();
			prev.lines.push(l);
		} else if (m) {
			entries.push({ key: m[1].trim(), value: (m[2] ?? '').trim(), lines: [l] });
		} else {
			orphans.push(l);
		}
	}
	return { entries, orphans };
}

function parsePlain(lines: NumberedLine[], source: string, issues: ParseIssue[]): OpenMpiFacts {
	const f = emptyOpenMpi('plain');
	const { entries, orphans } = plainEntries(lines);
	for (const e of entries) {
		const ev: Evidence = lineEvidence(source, e.lines[0]);
		const mca = /^MCA ([A-Za-z0-9_]+)$/.exec(e.key);
		if (mca) {
			const cm = /^([A-Za-z0-9_]+)\s*(?:\((.*)\))?/.exec(e.value);
			if (cm) {
				const ver = /Component v([^,)\s]+)/.exec(cm[2] ?? '');
				const comp: McaComponent = { framework: mca[1], name: cm[1], version: ver ? ver[1] : '', evidence: ev };
				f.components.push(comp);
			}
			continue;
		}
		switch (e.key) {
			case 'Open MPI': if (!f.version) { f.version = { value: e.value, evidence: ev }; } break;
			case 'Ident string': if (!f.ident) { f.ident = { value: e.value, evidence: ev }; } break;
			case 'Prefix': if (!f.prefix) { f.prefix = { value: e.value, evidence: ev }; } break;
			case 'MPI extensions': if (!f.mpiExtensions) { f.mpiExtensions = { value: e.value, evidence: ev }; } break;
			case 'Configure command line': if (!f.configureLine) { applyConfigure(f, source, e.lines, e.value); } break;
			default: break;
		}
	}
	// The plain format has no built_with_cuda parameter: derive it from the CUDA components Open MPI only builds with CUDA.
	const cudaComp = f.components.find((c) => (c.framework === 'accelerator' && c.name === 'cuda') || (c.framework === 'btl' && c.name === 'smcuda'));
	if (cudaComp) {
		f.builtWithCuda = { value: true, evidence: cudaComp.evidence };
		f.builtWithCudaBasis = 'components';
	} else if (f.configuredWithCuda) {
		f.builtWithCuda = { value: !/^--with-cuda=no$/.test(f.configuredWithCuda.value), evidence: f.configuredWithCuda.evidence };
		f.builtWithCudaBasis = 'configure';
	} else if (f.components.length > 0) {
		f.builtWithCuda = { value: false, evidence: f.version?.evidence ?? f.components[0].evidence };
		f.builtWithCudaBasis = 'components';
	}
	if (orphans.length > 0) {
		issues.push(issue(source, 'info', `${orphans.length} line(s) of ompi_info output were not understood and were skipped.`,
			orphans.slice(0, 3).map((o) => lineEvidence(source, o))));
	}
	return f;
}

/** Parse one ompi_info output (either format). Never throws. */
export function parseOmpiInfo(text: string, source = 'ompi_info'): OmpiInfoResult {
	const issues: ParseIssue[] = [];
	if (text.trim() === '') {
		issues.push(issue(source, 'warning', 'ompi_info printed nothing.'));
		return { facts: null, issues };
	}
	if (looksBinary(text)) {
		issues.push(issue(source, 'warning', 'ompi_info output looks binary or corrupted; it was not parsed.', firstLineEvidence(source, text)));
		return { facts: null, issues };
	}
	const lines = splitLines(text);
	const format = detectFormat(lines);
	if (format === null) {
		issues.push(issue(source, 'warning', 'ompi_info output is in no known format (neither --parsable nor plain).', firstLineEvidence(source, text)));
		return { facts: null, issues };
	}
	const facts = format === 'parsable' ? parseParsable(lines, source, issues) : parsePlain(lines, source, issues);
	if (!facts.version) {
		const last = lines.length > 0 ? lines[lines.length - 1] : undefined;
		issues.push(issue(source, 'warning', 'ompi_info output has no Open MPI version line (truncated?).',
			last ? [lineEvidence(source, last)] : []));
	}
	return { facts, issues };
}

/** A parameter by name (parsable format), or undefined. */
export function mcaParam(f: OpenMpiFacts | null, name: string): McaParam | undefined {
	return f ? f.params[name] : undefined;
}

/** Components of one framework. */
export function componentsOf(f: OpenMpiFacts | null, framework: string): McaComponent[] {
	return f ? f.components.filter((c) => c.framework === framework) : [];
}
