/**
 * Offline bundles (docs/bundle.md): a directory holding every raw output of one inspection, readable by people
 * (`raw/<name>.stdout` is exactly what the tool printed) and re-analysable anywhere with `gpumpi-doctor analyze`.
 * Reading treats the bundle as hostile: every field is validated, file names are checked against one pattern
 * (no dots, no separators: no traversal), symlinks and oversized files are refused, and every error names its file.
 */
import { performance } from 'node:perf_hooks';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { version as toolVersion, name as toolName } from '../../package.json';
import { reportHeadline } from '../shared/headline';
import { REPORT_SCHEMA, type HostRef, type RawOutput, type Report } from '../shared/report';
import { analyze } from './analyze';
import { replaceDirWhole } from './fileWrite';

export const BUNDLE_SCHEMA = 'gpumpi-doctor.bundle/1';
export const MANIFEST_FILE = 'bundle.json';

/** Largest single file read back (stdout of `ompi_info --parsable --all` is ~1 MB; engine output of many ranks more). */
export const MAX_FILE_BYTES = 64 * 1024 * 1024;
/** Largest bundle read back, all files together. */
export const MAX_BUNDLE_BYTES = 256 * 1024 * 1024;
/** Most raw outputs a bundle may list. */
export const MAX_RAW_OUTPUTS = 1000;

/** One raw output as the manifest lists it. */
export interface BundleEntry {
	id: string;
	/** Paths relative to the bundle directory, `raw/<name>.stdout|.stderr|.json`. */
	stdout: string;
	stderr: string;
	meta: string;
}

/** `bundle.json`. */
export interface BundleManifest {
	schema: typeof BUNDLE_SCHEMA;
	tool: { name: string; version: string };
	host: HostRef;
	createdAt: string;
	raw: BundleEntry[];
}

/** The `.json` meta file of one raw output: everything but stdout/stderr. */
type RawMeta = Omit<RawOutput, 'stdout' | 'stderr'>;

/** A bundle that cannot be read; the message names the file and what is wrong with it. */
export class BundleError extends Error {}

/** File-name stem for an id: only [A-Za-z0-9_-] survive (no dots, no slashes), capped; made unique by the caller. */
export function safeName(id: string): string {
	const s = id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80);
	return s === '' ? 'output' : s;
}

const ENTRY_PATH = /^raw\/[A-Za-z0-9_-]{1,100}\.(stdout|stderr|json)$/;

/**
 * Write `report`'s raw outputs as a bundle into `dir` (created; must be new, empty or an older bundle). Whole or not
 * at all (core/fileWrite.ts replaceDirWhole): the bundle is written into a directory beside `dir` and renamed into
 * place, so a full disk, an error or a crash part-way leaves `dir` as it was (an older bundle intact) and no partial
 * bundle under its name. Errors name `dir` (Node's own ENOSPC message names no file). Returns the manifest.
 */
export async function writeBundle(dir: string, report: Report): Promise<BundleManifest> {
	let st: fs.Stats | null = null;
	try { st = await fs.promises.stat(dir); } catch { /* new */ }
	if (st && !st.isDirectory()) { throw new BundleError(`${dir}: exists and is not a directory`); }
	const existing = st ? (await fs.promises.readdir(dir)).filter((n) => n !== 'raw') : [];
	if (existing.length > 0 && !existing.includes(MANIFEST_FILE)) {
		throw new BundleError(`${dir}: refusing to write a bundle into a directory that has other files (${existing.slice(0, 3).join(', ')})`);
	}
	let manifest: BundleManifest | null = null;
	try {
		const whole = await replaceDirWhole(dir, async (staging) => { manifest = await fillBundle(staging, report); });
		if (!whole) {
			// Nowhere beside it to stage (a read-only parent, `dir` a mount point): in place, the old manifest removed
			// first and the new one written last, so a cut write is refused on reading, never half-read.
			await fs.promises.rm(path.join(dir, MANIFEST_FILE), { force: true });
			manifest = await fillBundle(dir, report);
		}
	} catch (e) {
		const err = e as NodeJS.ErrnoException;
		throw new BundleError(`cannot write the bundle ${dir}: ${err.code ? `${err.code}: ` : ''}${err.message.replace(/^[A-Z]+: /, '')}`);
	}
	return manifest!;
}

/** Write the bundle's files into `dir` (the manifest last). */
async function fillBundle(dir: string, report: Report): Promise<BundleManifest> {
	await fs.promises.mkdir(path.join(dir, 'raw'), { recursive: true });
	const used = new Set<string>();
	const entries: BundleEntry[] = [];
	for (const r of report.raw) {
		let stem = safeName(r.id);
		for (let i = 2; used.has(stem); i++) { stem = `${safeName(r.id).slice(0, 80)}-${i}`; }
		used.add(stem);
		const e: BundleEntry = { id: r.id, stdout: `raw/${stem}.stdout`, stderr: `raw/${stem}.stderr`, meta: `raw/${stem}.json` };
		const meta: RawMeta = { id: r.id, command: r.command, exitCode: r.exitCode, durationMs: r.durationMs };
		if (r.error !== undefined) { meta.error = r.error; }
		if (r.timedOut !== undefined) { meta.timedOut = r.timedOut; }
		if (r.notes !== undefined) { meta.notes = r.notes; }
		await fs.promises.writeFile(path.join(dir, e.stdout), r.stdout);
		await fs.promises.writeFile(path.join(dir, e.stderr), r.stderr);
		await fs.promises.writeFile(path.join(dir, e.meta), JSON.stringify(meta, null, 2) + '\n');
		entries.push(e);
	}
	const manifest: BundleManifest = { schema: BUNDLE_SCHEMA, tool: report.tool, host: report.host, createdAt: report.createdAt, raw: entries };
	await fs.promises.writeFile(path.join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n');
	return manifest;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function text(o: Obj, key: string, where: string, max = 4096): string {
	const v = o[key];
	if (typeof v !== 'string') { throw new BundleError(`${where}: "${key}" must be a string`); }
	if (v.length > max) { throw new BundleError(`${where}: "${key}" is longer than ${max} characters`); }
	return v;
}

/** Read one file of the bundle: inside `dir`, a regular file (no symlink), not larger than the limits. */
async function readInside(dir: string, rel: string, budget: { left: number }): Promise<string> {
	const where = `${path.join(dir, rel)}`;
	const full = path.resolve(dir, rel);
	if (!full.startsWith(path.resolve(dir) + path.sep)) { throw new BundleError(`${where}: path leaves the bundle directory`); }
	let st: fs.Stats;
	try { st = await fs.promises.lstat(full); } catch (e) {
		throw new BundleError(`${where}: missing (${(e as NodeJS.ErrnoException).code ?? 'unreadable'})`);
	}
	if (st.isSymbolicLink()) { throw new BundleError(`${where}: is a symbolic link; bundles hold plain files only`); }
	if (!st.isFile()) { throw new BundleError(`${where}: not a regular file`); }
	if (st.size > MAX_FILE_BYTES) { throw new BundleError(`${where}: ${st.size} bytes, more than the ${MAX_FILE_BYTES}-byte limit for one file`); }
	budget.left -= st.size;
	if (budget.left < 0) { throw new BundleError(`${where}: the bundle is larger than ${MAX_BUNDLE_BYTES} bytes in all`); }
	return fs.promises.readFile(full, 'utf8');
}

function parseJson(textIn: string, where: string): unknown {
	try { return JSON.parse(textIn) as unknown; } catch (e) {
		throw new BundleError(`${where}: not valid JSON (${e instanceof Error ? e.message : String(e)})`);
	}
}

function readManifest(v: unknown, where: string): BundleManifest {
	if (!isObj(v)) { throw new BundleError(`${where}: must be a JSON object`); }
	if (v.schema !== BUNDLE_SCHEMA) { throw new BundleError(`${where}: schema is ${JSON.stringify(v.schema ?? null)}, expected "${BUNDLE_SCHEMA}"`); }
	const tool = isObj(v.tool) ? v.tool : null;
	const host = isObj(v.host) ? v.host : null;
	if (!tool) { throw new BundleError(`${where}: "tool" must be an object`); }
	if (!host) { throw new BundleError(`${where}: "host" must be an object`); }
	const kind = host.kind;
	if (kind !== 'local' && kind !== 'ssh' && kind !== 'bundle') { throw new BundleError(`${where}: host.kind must be "local", "ssh" or "bundle"`); }
	if (!Array.isArray(v.raw)) { throw new BundleError(`${where}: "raw" must be an array`); }
	if (v.raw.length > MAX_RAW_OUTPUTS) { throw new BundleError(`${where}: lists ${v.raw.length} raw outputs, more than ${MAX_RAW_OUTPUTS}`); }
	const ids = new Set<string>();
	const files = new Set<string>();
	const raw = v.raw.map((e, i): BundleEntry => {
		const w = `${where}: raw[${i}]`;
		if (!isObj(e)) { throw new BundleError(`${w} must be an object`); }
		const id = text(e, 'id', w, 300);
		if (CONTROL.test(id)) { throw new BundleError(`${w}: id contains control characters`); }
		if (ids.has(id)) { throw new BundleError(`${w}: id ${JSON.stringify(id)} is listed twice`); }
		ids.add(id);
		const entry: BundleEntry = { id, stdout: text(e, 'stdout', w, 200), stderr: text(e, 'stderr', w, 200), meta: text(e, 'meta', w, 200) };
		for (const [k, p] of [['stdout', entry.stdout], ['stderr', entry.stderr], ['meta', entry.meta]] as const) {
			const ext = k === 'meta' ? 'json' : k;
			if (!ENTRY_PATH.test(p) || !p.endsWith(`.${ext}`)) { throw new BundleError(`${w}: ${k} file ${JSON.stringify(p)} is not of the form raw/<name>.${ext} (letters, digits, _ and - only)`); }
			if (files.has(p)) { throw new BundleError(`${w}: file ${p} is used twice`); }
			files.add(p);
		}
		return entry;
	});
	return {
		schema: BUNDLE_SCHEMA,
		tool: { name: text(tool, 'name', `${where}: tool`, 200), version: text(tool, 'version', `${where}: tool`, 200) },
		host: { id: text(host, 'id', `${where}: host`, 500), label: text(host, 'label', `${where}: host`, 500), kind },
		createdAt: text(v, 'createdAt', where, 100),
		raw,
	};
}

function readMeta(v: unknown, entry: BundleEntry, where: string): RawMeta {
	if (!isObj(v)) { throw new BundleError(`${where}: must be a JSON object`); }
	if (v.id !== entry.id) { throw new BundleError(`${where}: id ${JSON.stringify(v.id ?? null)} does not match the manifest's ${JSON.stringify(entry.id)}`); }
	if (!Array.isArray(v.command) || v.command.length > 10000 || !v.command.every((c) => typeof c === 'string' && c.length <= 65536)) {
		throw new BundleError(`${where}: "command" must be an array of strings`);
	}
	const exitCode = v.exitCode;
	if (exitCode !== null && !(typeof exitCode === 'number' && Number.isInteger(exitCode))) { throw new BundleError(`${where}: "exitCode" must be an integer or null`); }
	const durationMs = v.durationMs;
	if (typeof durationMs !== 'number' || !Number.isFinite(durationMs) || durationMs < 0) { throw new BundleError(`${where}: "durationMs" must be a non-negative number`); }
	const meta: RawMeta = { id: entry.id, command: v.command as string[], exitCode, durationMs };
	if (v.error !== undefined) { meta.error = text(v, 'error', where, 65536); }
	if (v.timedOut !== undefined) {
		if (typeof v.timedOut !== 'boolean') { throw new BundleError(`${where}: "timedOut" must be true or false`); }
		meta.timedOut = v.timedOut;
	}
	if (v.notes !== undefined) {
		if (!Array.isArray(v.notes) || !v.notes.every((n) => typeof n === 'string')) { throw new BundleError(`${where}: "notes" must be an array of strings`); }
		meta.notes = v.notes as string[];
	}
	return meta;
}

/** Read and validate a whole bundle. Throws BundleError (naming the file) for anything malformed. */
export async function readBundleFull(dir: string): Promise<{ manifest: BundleManifest; raw: RawOutput[] }> {
	let st: fs.Stats;
	try { st = await fs.promises.stat(dir); } catch { throw new BundleError(`${dir}: no such bundle directory`); }
	if (!st.isDirectory()) { throw new BundleError(`${dir}: not a directory (a bundle is a directory with ${MANIFEST_FILE})`); }
	const budget = { left: MAX_BUNDLE_BYTES };
	const mPath = path.join(dir, MANIFEST_FILE);
	let mText: string;
	try { mText = await readInside(dir, MANIFEST_FILE, budget); } catch (e) {
		if (e instanceof BundleError && /missing/.test(e.message)) { throw new BundleError(`${mPath}: missing — not a GPU-MPI Doctor bundle (or one whose writing was interrupted)`); }
		throw e;
	}
	const manifest = readManifest(parseJson(mText, mPath), mPath);
	const raw: RawOutput[] = [];
	for (const e of manifest.raw) {
		const metaPath = path.join(dir, e.meta);
		const meta = readMeta(parseJson(await readInside(dir, e.meta, budget), metaPath), e, metaPath);
		raw.push({ ...meta, stdout: await readInside(dir, e.stdout, budget), stderr: await readInside(dir, e.stderr, budget) });
	}
	return { manifest, raw };
}

/** Read a bundle's raw outputs (validated). Throws BundleError naming the offending file. */
export async function readBundle(dir: string): Promise<RawOutput[]> {
	return (await readBundleFull(dir)).raw;
}

/** Analyse a bundle into a Report, exactly as `inspect` would have on that host (CLI `analyze` and the extension). */
export async function reportFromBundle(dir: string): Promise<Report> {
	const started = performance.now();
	const { manifest, raw } = await readBundleFull(dir);
	const { facts, findings, summary } = analyze(raw, manifest.host.label);
	const host: HostRef = { id: manifest.host.id, label: manifest.host.label, kind: 'bundle' };
	const engine = facts.engine?.document ?? null;
	return {
		schema: REPORT_SCHEMA,
		tool: { name: toolName, version: toolVersion },
		createdAt: manifest.createdAt,
		host,
		summary, headline: reportHeadline({ host, summary, findings, raw, engine }), findings, facts, raw,
		engine,
		probe: facts.probe ? { libraries: facts.probe.libraries, nvml: facts.probe.nvml, elapsed_ms: 0 } : null,
		elapsedMs: Math.round(performance.now() - started),
	};
}
