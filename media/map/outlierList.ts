/**
 * Anomaly first (issue 36): the outlier analysis of a map as the panel's first lines — the headline, then each
 * outlier as a button that opens its evidence (the numbers the rule compared, the path class, the NIC / GPU / NUMA
 * facts, what it explains, its pairs as buttons) and a button that shows its nodes in the matrix; the suspects
 * (single pairs) folded away. While a map runs: the failures as they come, grouped by rank.
 */
import type { MapLiveFailure } from '../../extension/shared/mapLive';
import type { MapOutlier, MapOutlierReport } from '../../extension/shared/mapSchema';
import { el, num } from './dom';

/** What the list asks of the page. */
export interface OutlierActions {
	/** Show the nodes of a finding (host names: one, or two for a link). */
	showNodes(hosts: string[]): void;
	/** Show one pair's evidence. */
	showPair(a: number, b: number): void;
	/** Host of a rank (for findings about pairs and ranks), or null. */
	hostOfRank(rank: number): string | null;
}

/** The host names a finding is about. */
export function findingHosts(f: MapOutlier, hostOfRank: (r: number) => string | null): string[] {
	switch (f.level) {
		case 'node': return [f.subject];
		case 'nic': case 'gpu': return [f.subject.split(' ')[0]];
		case 'link': return f.subject.split(' — ');
		case 'rank': { const m = /\(([^)]*)\)$/.exec(f.subject); return m ? [m[1]] : []; }
		default: {
			const [a, b] = f.subject.split('-').map(Number);
			return [...new Set([hostOfRank(a), hostOfRank(b)].filter((h): h is string => h !== null))];
		}
	}
}

/** Outliers listed at first, and at most after "Show more". */
const SHOWN_FIRST = 8;
const SHOWN_MAX = 200;

/** How a finding marks its node on the matrix axes. */
export function markLabel(f: MapOutlier): string {
	return `${f.kind === 'failed' ? 'failed' : f.kind === 'high_latency' ? 'high latency' : 'slow'} ${f.level}`;
}

function numbers(f: MapOutlier): string {
	if (f.kind === 'failed') { return `${f.pairs} failed pair${f.pairs === 1 ? '' : 's'}; ${f.path_class}`; }
	const unit = f.kind === 'high_latency' ? 'µs' : 'GB/s';
	return `median ${num(f.value ?? 0)} ${unit} of ${f.pairs} pair${f.pairs === 1 ? '' : 's'}; the rest of its class: ${num(f.reference ?? 0)} ${unit} (${f.reference_pairs} pairs, spread ×${num(Math.exp(f.mad ?? 0))}); the rule's line: ${num(f.threshold ?? 0)} ${unit}; ${f.path_class}`;
}

function item(f: MapOutlier, actions: OutlierActions, prefix: string): HTMLLIElement {
	const li = el('li', { class: `outlier outlier-${f.kind}` });
	const toggle = el('button', { type: 'button', class: 'finding', 'aria-expanded': 'false' }, `${prefix}${f.sentence}`);
	const body = el('div', { class: 'evidence' });
	body.hidden = true;
	toggle.addEventListener('click', () => {
		const open = body.hidden;
		body.hidden = !open;
		toggle.setAttribute('aria-expanded', String(open));
		if (open && body.childElementCount === 0) { fillEvidence(body, f, actions); }
	});
	li.append(toggle, body);
	return li;
}

function fillEvidence(body: HTMLElement, f: MapOutlier, actions: OutlierActions): void {
	const hosts = findingHosts(f, actions.hostOfRank);
	const show = el('button', { type: 'button', class: 'show-nodes' }, hosts.length > 1 ? `Show ${hosts.join(' — ')} in the matrix` : `Show ${hosts[0] ?? '?'} in the matrix`);
	show.addEventListener('click', () => actions.showNodes(hosts));
	body.append(el('p', { class: 'numbers' }, numbers(f)), show);
	if (f.facts.length > 0) {
		const ul = el('ul', { class: 'facts', 'aria-label': 'Facts the engine read' });
		for (const x of f.facts) { ul.append(el('li', {}, x)); }
		body.append(el('h4', {}, 'Facts'), ul);
	}
	if (f.explains.length > 0) {
		body.append(el('p', { class: 'explains' }, `Explains: ${f.explains.slice(0, 12).join(', ')}${f.explains.length > 12 ? `, … (${f.explains.length} in all)` : ''}`));
	}
	const ul = el('ul', { class: 'pairs', 'aria-label': 'Its pairs' });
	const sorted = [...f.evidence_pairs].sort((x, y) => (x.value ?? -1) - (y.value ?? -1));
	for (const p of sorted.slice(0, 16)) {
		const b = el('button', { type: 'button', class: 'pair' }, `${p.a} ↔ ${p.b}: ${p.value === null ? p.status : `${num(p.value)} ${f.kind === 'high_latency' ? 'µs' : 'GB/s'}`}`);
		b.addEventListener('click', () => actions.showPair(p.a, p.b));
		const li = el('li'); li.append(b); ul.append(li);
	}
	body.append(el('h4', {}, `Pairs (${f.evidence_pairs.length}${f.evidence_pairs.length > 16 ? ', the 16 lowest' : ''})`), ul);
}

/** The analysis as elements: headline, outliers, suspects. `interim`: of a map still running. */
export function renderOutliers(r: MapOutlierReport | null, actions: OutlierActions, opts: { interim: boolean; note: string | null; suspectsTitle: string; heldBackTitle: string }): HTMLElement[] {
	if (!r) { return opts.note ? [el('p', { class: 'headline muted' }, opts.note)] : []; }
	const out: HTMLElement[] = [el('h2', { class: `headline${r.outliers.length > 0 ? ' bad' : ''}`, id: 'headline' }, `${opts.interim ? 'So far: ' : ''}${r.headline}`)];
	if (r.outliers.length > 0) {
		// The first few lead; the rest one click away (a list of 80 would push the matrix off the screen).
		const ol = el('ol', { class: 'outliers', 'aria-labelledby': 'headline' });
		const add = (list: MapOutlier[]): void => { for (const f of list) { ol.append(item(f, actions, '')); } };
		add(r.outliers.slice(0, SHOWN_FIRST));
		out.push(ol);
		if (r.outliers.length > SHOWN_FIRST) {
			const all = Math.min(r.outliers.length, SHOWN_MAX);
			const more = el('button', { type: 'button', class: 'more' }, `Show ${all - SHOWN_FIRST} more${r.outliers.length > SHOWN_MAX ? ` (of ${r.outliers.length - SHOWN_FIRST}; all are in the saved document)` : ''}`);
			more.addEventListener('click', () => { add(r.outliers.slice(SHOWN_FIRST, SHOWN_MAX)); more.remove(); (ol.children[SHOWN_FIRST]?.querySelector('button') as HTMLButtonElement | null)?.focus(); });
			out.push(more);
		}
	}
	for (const [list, title, cls] of [[r.suspects, opts.suspectsTitle, 'suspects'], [r.held_back ?? [], opts.heldBackTitle, 'suspects held-back']] as const) {
		if (list.length === 0) { continue; }
		const d = el('details', { class: cls });
		d.append(el('summary', {}, `${title}: ${list.length}`));
		const ol = el('ol', { class: 'outliers' });
		for (const f of list.slice(0, 50)) { ol.append(item(f, actions, '')); }
		d.append(ol);
		out.push(d);
	}
	out.push(el('p', { class: 'rule muted' }, `Rule: ${r.rule}`));
	if (opts.note) { out.push(el('p', { class: 'muted' }, opts.note)); }
	return out;
}

/** The failures of a running map so far, by rank (the most failed pairs first), each with its first error. */
export function renderFailures(failures: readonly MapLiveFailure[], total: number, title: string, actions: OutlierActions): HTMLElement[] {
	if (total === 0) { return []; }
	const byRank = new Map<number, MapLiveFailure[]>();
	for (const f of failures) { for (const r of [f.a, f.b]) { byRank.set(r, [...(byRank.get(r) ?? []), f]); } }
	const ranked = [...byRank.entries()].sort((x, y) => y[1].length - x[1].length || x[0] - y[0]);
	// A rank counts when it has two failed pairs or more (its partners have one each), or when it is all there is.
	const shown = ranked.filter(([, l]) => l.length >= 2).slice(0, 10);
	const ul = el('ul', { class: 'failures' });
	for (const [rank, list] of shown.length > 0 ? shown : ranked.slice(0, 5)) {
		const first = list.find(f => f.error)?.error ?? list[0].status;
		const b = el('button', { type: 'button', class: 'pair' }, `rank ${rank}${actions.hostOfRank(rank) ? ` (${actions.hostOfRank(rank)})` : ''}: ${list.length} failed pair${list.length === 1 ? '' : 's'} — ${first}`);
		b.addEventListener('click', () => actions.showPair(list[0].a, list[0].b));
		const li = el('li'); li.append(b); ul.append(li);
	}
	return [el('h3', {}, `${title}: ${total} pair${total === 1 ? '' : 's'}`), ul];
}
