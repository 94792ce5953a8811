/**
 * Reads a saved transport map: a map document (gpumpi.map/1, written by `gpumpi-doctor map --out` or the panel's
 * JSON export) or a device result of scripts/gpu/map.sh (gpumpi.map-gpu/1: one engine document per run, each joined
 * here with that run's evidence lines). Pure (value or text in, documents out); used by the CLI (`map --from-json`)
 * and the transport-map panel alike.
 */
import { validateMapDocument, type MapDocument } from '../../shared/mapSchema';
import { applyEvidence } from './mapEvidence';

/** One run of a device result: its map, or why it has none. */
export interface DeviceMapRun {
	name: string;
	doc: MapDocument | string;
}

/** What a saved map file holds (invalid: `error` is the whole message, `reason` the validator's or parser's part). */
export type LoadedMap =
	| { kind: 'device-result'; runs: DeviceMapRun[] }
	| { kind: 'map'; doc: MapDocument }
	| { kind: 'invalid'; error: string; reason: string };

/** Runs of a scripts/gpu/map.sh result ("gpumpi.map-gpu/1"), each with the evidence joined; null for other JSON. */
export function fromDeviceResult(raw: unknown): DeviceMapRun[] | null {
	if (typeof raw !== 'object' || raw === null || (raw as { schema?: unknown }).schema !== 'gpumpi.map-gpu/1') { return null; }
	const runs = (raw as { runs?: unknown }).runs;
	if (!Array.isArray(runs)) { return []; }
	return runs.map((r: unknown, i) => {
		const run = (typeof r === 'object' && r !== null ? r : {}) as { name?: unknown; document?: unknown; evidence_text?: unknown; exit_code?: unknown };
		const name = typeof run.name === 'string' ? run.name : `run ${i}`;
		if (run.document === null || run.document === undefined) { return { name, doc: `no map document (exit status ${String(run.exit_code)})` }; }
		const doc = validateMapDocument(run.document);
		if (typeof doc === 'string') { return { name, doc }; }
		return { name, doc: applyEvidence(doc, '', typeof run.evidence_text === 'string' ? run.evidence_text : '') };
	});
}

/** Recognise a parsed saved map. */
export function loadMapValue(raw: unknown): LoadedMap {
	const runs = fromDeviceResult(raw);
	if (runs) { return { kind: 'device-result', runs }; }
	// A `gpumpi-doctor guard --out` result (docs/guard-schema.md): its traffic map.
	if (typeof raw === 'object' && raw !== null && (raw as { schema?: unknown }).schema === 'gpumpi-guard-result/1') {
		const m = (raw as { map?: unknown }).map;
		if (m === null || m === undefined) { return { kind: 'invalid', error: 'not a map: this guard result has no map (no rank reported)', reason: 'guard result without a map' }; }
		raw = m;
	}
	const doc = validateMapDocument(raw);
	return typeof doc === 'string' ? { kind: 'invalid', error: `not a map: ${doc}`, reason: doc } : { kind: 'map', doc };
}

/** Parse and recognise a saved map's text ("not JSON: …" as an invalid file). */
export function loadMapText(text: string): LoadedMap {
	let raw: unknown;
	try { raw = JSON.parse(text); } catch (e) {
		const reason = e instanceof Error ? e.message : String(e);
		return { kind: 'invalid', error: `not JSON: ${reason}`, reason };
	}
	return loadMapValue(raw);
}
