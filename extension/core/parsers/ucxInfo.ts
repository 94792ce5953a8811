/**
 * Parsers for `ucx_info -v` (version, configure flags), `ucx_info -b` (build config `#define`s) and
 * `ucx_info -d` (memory domains, transports and their devices).
 */
import type { Located, ParseIssue, UcxFacts, UcxTransport } from '../facts';
import { firstLineEvidence, issue, lineEvidence, looksBinary, splitConfigureArgs, splitLines } from './text';

/** A UcxFacts with nothing known. */
export function emptyUcx(): UcxFacts {
	return { version: null, configureFlags: null, builtWithCuda: null, builtWithGdrcopy: null, threadSupport: null, devicesListed: false, memoryDomains: [], transports: [], config: {} };
}

/** Derive cuda/gdrcopy build flags from a configure line (only sets what is not known yet). */
function applyConfigureFlags(u: UcxFacts, flags: Located<string>): void {
	if (!u.configureFlags) { u.configureFlags = flags; }
	const args = splitConfigureArgs(flags.value);
	const cuda = args.find((a) => /^--with(out)?-cuda(=|$)/.test(a));
	if (cuda && !u.builtWithCuda) {
		u.builtWithCuda = { value: !/^--without-cuda/.test(cuda) && cuda !== '--with-cuda=no', evidence: flags.evidence };
	}
	const gdr = args.find((a) => /^--with(out)?-gdrcopy(=|$)/.test(a));
	if (gdr && !u.builtWithGdrcopy) {
		u.builtWithGdrcopy = { value: !/^--without-gdrcopy/.test(gdr) && gdr !== '--with-gdrcopy=no', evidence: flags.evidence };
	}
}

/** Parse `ucx_info -v`. */
export function parseUcxVersion(text: string, u: UcxFacts, source = 'ucx_info_v'): ParseIssue[] {
	if (looksBinary(text)) { return [issue(source, 'warning', 'ucx_info -v output looks binary or corrupted.', firstLineEvidence(source, text))]; }
	for (const l of splitLines(text)) {
		const v = /^#\s*(?:Library version:|Version)\s+(\S+)/.exec(l.text) ?? /^#\s*Library version:\s*(\S+)/.exec(l.text);
		if (v && !u.version) { u.version = { value: v[1], evidence: lineEvidence(source, l) }; continue; }
		const c = /^#\s*Configured with:\s*(.*)$/.exec(l.text);
		if (c) { applyConfigureFlags(u, { value: c[1].trim(), evidence: lineEvidence(source, l) }); }
	}
	if (!u.version) {
		return [issue(source, 'warning', 'ucx_info -v printed no "# Version" / "# Library version" line.', firstLineEvidence(source, text))];
	}
	return [];
}

/** Parse `ucx_info -b` (`#define NAME value` lines). */
export function parseUcxBuild(text: string, u: UcxFacts, source = 'ucx_info_b'): ParseIssue[] {
	if (looksBinary(text)) { return [issue(source, 'warning', 'ucx_info -b output looks binary or corrupted.', firstLineEvidence(source, text))]; }
	let defines = 0;
	let cudaDefine: Located<boolean> | null = null;
	let gdrDefine: Located<boolean> | null = null;
	for (const l of splitLines(text)) {
		const m = /^#define\s+(\w+)(?:\s+(.*?))?\s*$/.exec(l.text);
		if (!m) { continue; }
		defines++;
		const [, name, value = ''] = m;
		if (name === 'HAVE_CUDA') { cudaDefine = { value: value.trim() !== '0', evidence: lineEvidence(source, l) }; }
		else if (name === 'HAVE_GDRCOPY' || name === 'HAVE_GDRAPI_H') { gdrDefine = { value: value.trim() !== '0', evidence: lineEvidence(source, l) }; }
		// configure --enable-mt (default: no) defines ENABLE_MT 1, else 0: a UCP worker asked for
		// UCS_THREAD_MODE_MULTI is then not multi-threaded (src/ucp/core/ucp_worker.c).
		else if (name === 'ENABLE_MT') { u.threadSupport = { value: value.trim() !== '0' && value.trim() !== '', evidence: lineEvidence(source, l) }; }
		else if (name === 'UCX_CONFIGURE_FLAGS') {
			applyConfigureFlags(u, { value: value.replace(/^"|"$/g, ''), evidence: lineEvidence(source, l) });
		} else if ((name === 'VERSION' || name === 'PACKAGE_VERSION') && !u.version) {
			u.version = { value: value.replace(/^"|"$/g, ''), evidence: lineEvidence(source, l) };
		}
	}
	// A #define is the stronger evidence: it is what the build really used.
	if (cudaDefine) { u.builtWithCuda = cudaDefine; }
	if (gdrDefine) { u.builtWithGdrcopy = gdrDefine; }
	if (defines === 0) {
		return [issue(source, 'warning', 'ucx_info -b printed no #define lines.', firstLineEvidence(source, text))];
	}
	return [];
}

/** Parse `ucx_info -d` (`# Memory domain: cuda_cpy`, `#      Transport: cuda_copy`, `#         Device: cuda`). */
export function parseUcxDevices(text: string, u: UcxFacts, source = 'ucx_info_d'): ParseIssue[] {
	if (looksBinary(text)) { return [issue(source, 'warning', 'ucx_info -d output looks binary or corrupted.', firstLineEvidence(source, text))]; }
	u.devicesListed = true;
	let md = '';
	let pending: UcxTransport | null = null;
	for (const l of splitLines(text)) {
		const mdm = /^#\s*Memory domain:\s*(\S+)/.exec(l.text);
		if (mdm) {
			md = mdm[1];
			u.memoryDomains.push({ value: md, evidence: lineEvidence(source, l) });
			pending = null;
			continue;
		}
		const tm = /^#\s*Transport:\s*(\S+)/.exec(l.text);
		if (tm) {
			pending = { name: tm[1], device: '', memoryDomain: md, evidence: lineEvidence(source, l) };
			u.transports.push(pending);
			continue;
		}
		const dm = /^#\s*Device:\s*(\S+)/.exec(l.text);
		if (dm && pending && pending.device === '') {
			pending.device = dm[1];
			// A transport appears once per device: the next Device line under the same Transport starts a new entry.
		} else if (dm && pending && pending.device !== '') {
			pending = { name: pending.name, device: dm[1], memoryDomain: md, evidence: pending.evidence };
			u.transports.push(pending);
		}
	}
	if (u.memoryDomains.length === 0) {
		return [issue(source, 'warning', 'ucx_info -d listed no "# Memory domain:" section.', firstLineEvidence(source, text))];
	}
	return [];
}

/** Names of the transports `ucx_info -d` listed (unique). */
export function transportNames(u: UcxFacts | null): string[] {
	return u ? [...new Set(u.transports.map((t) => t.name))] : [];
}

/** Parse `ucx_info -c` (`UCX_NAME=value` lines) into u.config. */
export function parseUcxConfig(text: string, u: UcxFacts, source = 'ucx_info_c'): ParseIssue[] {
	if (looksBinary(text)) { return [issue(source, 'warning', 'ucx_info -c output looks binary; it was not parsed.', firstLineEvidence(source, text))]; }
	let n = 0;
	for (const l of splitLines(text)) {
		const m = /^(UCX_[A-Z0-9_]+)=(.*)$/.exec(l.text.trim());
		if (m) { u.config[m[1]] = { value: m[2], evidence: lineEvidence(source, l) }; n++; }
	}
	return n === 0 && text.trim() !== '' ? [issue(source, 'warning', 'ucx_info -c printed no UCX_NAME=value line.', firstLineEvidence(source, text))] : [];
}
