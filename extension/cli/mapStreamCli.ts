/**
 * What `gpumpi-doctor map` adds for large jobs (docs/map-schema.md, "Streaming" and "Outliers"): `--json-lines`
 * (every streamed record as one JSON object per line on stdout as the rounds end, the final map last; progress stays
 * on stderr), the outlier analysis printed before the table, and the partial map written when the run is
 * interrupted (Ctrl-C) or ended early. Kept apart from mapCli.ts's argument parsing.
 */
import type { MapStreamRecord, MapStreamState } from '../core/map/mapStream';
import { findOutliers, renderOutlierLines } from '../core/map/outliers';
import type { MapDocument, MapIncomplete } from '../shared/mapSchema';
import type { CliIo } from './io';

/** One JSON object on one line. */
export function jsonLine(v: unknown): string {
	return `${JSON.stringify(v)}\n`;
}

/** `--json-lines`: write each streamed record (the plan, then one per round) to stdout as it completes. */
export function recordLines(io: CliIo): (record: MapStreamRecord, state: MapStreamState) => void {
	return record => {
		if (record.kind === 'plan') { io.stdout(jsonLine(record.plan)); } else if (record.kind === 'round') { io.stdout(jsonLine(record.round)); }
	};
}

/** The map with its outlier analysis (computed here for saved maps that have none). */
export function withOutliers(doc: MapDocument): MapDocument {
	// A guard map holds a program's traffic, not measurements: nothing to judge.
	return doc.outliers || doc.traffic_source ? doc : { ...doc, outliers: findOutliers(doc) };
}

/** The analysis as the text output's first lines ("Outliers: …", one line per finding), then a blank line. */
export function outlierText(doc: MapDocument): string {
	const r = withOutliers(doc).outliers;
	if (!r) { return ''; }
	const [headline, ...rest] = renderOutlierLines(r);
	return [`Outliers: ${headline}`, ...rest, ''].join('\n') + '\n';
}

/** What a partial map holds: "the partial map keeps what was measured: N of M pairs, K round record(s)". */
export function partialSummary(doc: MapDocument): string {
	const measured = doc.pairs.filter(p => p.status === 'ok' || p.status === 'data_error').length;
	return `the partial map keeps what was measured: ${measured} of ${doc.pairs.length} pairs, ${doc.partial?.rounds_received ?? 0} round record(s)`;
}

/** What to tell on stderr about a partial map (what it holds and why it is partial). */
export function partialNote(doc: MapDocument, why: string, interrupted: boolean): string {
	return `gpumpi-doctor map: ${interrupted ? 'interrupted; the run was stopped' : `the run ended early (${why})`}; ${partialSummary(doc)}\n`;
}

/** The engine printed its document, then ended the job with MPI_Abort: why (exit status 3 follows). */
export function incompleteNote(i: MapIncomplete): string {
	const why = [
		i.silent_ranks.length > 0 ? `rank${i.silent_ranks.length === 1 ? '' : 's'} ${i.silent_ranks.join(', ')} sent no end message` : '',
		i.barrier_timeouts > 0 ? `${i.barrier_timeouts} barrier${i.barrier_timeouts === 1 ? '' : 's'} missed the deadline (rounds unsynchronised from round ${i.first_unsynchronized_round})` : '',
		i.abandoned_requests > 0 ? `${i.abandoned_requests} MPI request${i.abandoned_requests === 1 ? '' : 's'} could be neither completed nor cancelled` : '',
	].filter(x => x).join('; ');
	return `gpumpi-doctor map: the engine ended the job with ${i.ends_with} after its document (MPI_Finalize would have waited): ${why}\n`;
}
