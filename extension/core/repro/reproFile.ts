/**
 * Reads a saved reproducer result from its text: a device result of scripts/gpu/repro.sh (repro.json: an array of
 * run entries, with raw outputs) or a report saved with `gpumpi-doctor repro … --json` (an ipc-report object, a
 * fallback-report object or an array of them). Pure (text in, reports out); throws Error with a clear message.
 */
import {
	REPRO_FALLBACK_REPORT_SCHEMA, REPRO_IPC_REPORT_SCHEMA, type ReproFallbackReport, type ReproIpcReport,
} from '../../shared/reproSchema';
import { runKey } from './bugReport';
import { reportsFromDeviceJson } from './reproRender';

/** Everything a saved result yields. */
export interface LoadedRepro {
	ipc: ReproIpcReport | null;
	fallback: ReproFallbackReport[];
	/** Raw output per run (device results only), keyed by runKey(config, variant-or-modes). */
	outputs: Record<string, string>;
	kind: 'device-result' | 'report';
}

function isObj(v: unknown): v is Record<string, unknown> {
	return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isIpcReport(v: unknown): v is ReproIpcReport {
	return isObj(v) && v.schema === REPRO_IPC_REPORT_SCHEMA && Array.isArray(v.variants) && isObj(v.verdict) &&
		v.variants.every(x => isObj(x) && typeof x.variant === 'string' && typeof x.config === 'string' && typeof x.outcome === 'string' && Array.isArray(x.evidence) && Array.isArray(x.command));
}

function isFallbackReport(v: unknown): v is ReproFallbackReport {
	return isObj(v) && v.schema === REPRO_FALLBACK_REPORT_SCHEMA && typeof v.config === 'string' && Array.isArray(v.results) && Array.isArray(v.runs) &&
		isObj(v.verdict) && Array.isArray((v.verdict as Record<string, unknown>).text) && isObj(v.transports) &&
		v.results.every(r => isObj(r) && typeof r.mode === 'string' && typeof r.size_bytes === 'number' && Array.isArray(r.memory));
}

/** Parse and recognise a saved result. */
export function loadReproText(text: string): LoadedRepro {
	let data: unknown;
	try { data = JSON.parse(text); } catch (e) { throw new Error(`not JSON: ${e instanceof Error ? e.message : String(e)}`); }
	if (isIpcReport(data)) { return { ipc: data, fallback: [], outputs: {}, kind: 'report' }; }
	if (isFallbackReport(data)) { return { ipc: null, fallback: [data], outputs: {}, kind: 'report' }; }
	if (Array.isArray(data) && data.length > 0 && data.every(isFallbackReport)) { return { ipc: null, fallback: data, outputs: {}, kind: 'report' }; }
	if (Array.isArray(data)) {
		const rep = reportsFromDeviceJson(data);
		const outputs: Record<string, string> = {};
		for (const e of data) {
			if (isObj(e) && typeof e.config === 'string' && typeof e.output === 'string') {
				const what = typeof e.variant === 'string' ? e.variant : typeof e.modes === 'string' ? e.modes : '';
				outputs[runKey(e.config, what)] = e.output;
			}
		}
		return { ipc: rep.ipc, fallback: rep.fallback, outputs, kind: 'device-result' };
	}
	throw new Error(`not a repro.json from scripts/gpu/repro.sh (expected a JSON array) nor a saved report (${REPRO_IPC_REPORT_SCHEMA} / ${REPRO_FALLBACK_REPORT_SCHEMA})`);
}
