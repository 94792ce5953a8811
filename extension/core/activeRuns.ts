/**
 * The runs the extension has in flight (inspection, map, reproducers, guard), so that ending the extension host —
 * a window reload, a window closed, VS Code quitting — ends their job trees too. Every launch runs in its own process
 * group (proc.ts: `detached`), so nothing else would: measured (docs/reliability.md, window reload) with the CLI killed
 * mid-map, mpirun and its 4 ranks were still running 3 s later, orphaned. `deactivate()` aborts every run here and
 * waits, bounded, for them to finish their own cleanup (kill the group, stop the remote session, remove the private
 * shared-memory directory). A hard kill of the extension host calls no deactivate: that case is runMarkers.ts's (the
 * next host ends what the dead one left).
 */

export interface ActiveRuns {
	/** A controller for a new run, registered until `end`. */
	begin(label: string): AbortController;
	/** The run has finished (call in its `finally`); resolves whoever waits in `abortAll`. */
	end(abort: AbortController): void;
	/** Labels of the runs in flight. */
	labels(): string[];
	/**
	 * Aborts every run in flight and waits up to `graceMs` for all of them to `end`. Resolves with the runs aborted and
	 * those still not ended after the grace period (their cleanup is still running or stuck).
	 */
	abortAll(graceMs: number): Promise<{ aborted: string[]; stillRunning: string[] }>;
}

export function createActiveRuns(): ActiveRuns {
	const runs = new Map<AbortController, { label: string; ended: Promise<void>; resolve: () => void }>();
	return {
		begin(label) {
			const abort = new AbortController();
			let resolve = (): void => undefined;
			const ended = new Promise<void>(r => { resolve = r; });
			runs.set(abort, { label, ended, resolve });
			return abort;
		},
		end(abort) {
			const r = runs.get(abort);
			if (!r) { return; }
			runs.delete(abort);
			r.resolve();
		},
		labels: () => [...runs.values()].map(r => r.label),
		async abortAll(graceMs) {
			const all = [...runs.entries()];
			for (const [abort] of all) { abort.abort(); }
			let timer: NodeJS.Timeout | undefined;
			const grace = new Promise<void>(r => { timer = setTimeout(r, Math.max(0, graceMs)); });
			await Promise.race([Promise.all(all.map(([, r]) => r.ended)), grace]);
			if (timer) { clearTimeout(timer); }
			return { aborted: all.map(([, r]) => r.label), stillRunning: [...runs.values()].map(r => r.label) };
		},
	};
}

/** The extension host's one registry. */
export const activeRuns: ActiveRuns = createActiveRuns();
