/**
 * Diagnostics panel webview client. Asks the host for its state with `ready`, renders the report with the shared
 * renderer, follows showReport/busy events, and turns clicks into `copy` / `rerun` / `save` / `compare` requests.
 * No inline scripts or styles: the CSP allows only this nonce'd bundle and the panel stylesheet.
 */
import { PANEL_PROTOCOL, type PanelRequests, type ToWebviewMessage } from '../../extension/shared/protocol';
import { evidenceTarget } from '../../extension/shared/findingLocations';
import { DEFAULT_STRINGS, renderReportHtml, type RenderStrings } from '../../extension/shared/render';
import type { Report } from '../../extension/shared/report';
import { errorMessage, startWebview } from '../shared/webviewPage';

/** Strings the host put in `<body data-strings>` (already localised); anything missing falls back to English. */
interface PanelStrings extends RenderStrings {
	rerun: string;
	copied: string;
	waiting: string;
	copyFailed: string;
}

const page = startWebview<ToWebviewMessage, PanelRequests, PanelStrings>(PANEL_PROTOCOL,
	{ ...DEFAULT_STRINGS, rerun: 'Re-run', copied: 'Copied', waiting: 'No report yet.', copyFailed: 'Copy failed' }, msg => {
		switch (msg.type) {
			case 'showReport': showReport(msg.report); return;
			case 'busy': setBusy(msg.busy, msg.message); return;
			case 'revealFinding': revealFinding(msg.findingIndex); return;
		}
	});
const { rpc, strings, content } = page;
const rerunButton = document.getElementById('rerun') as HTMLButtonElement | null;

let shown: Report | null = null;

function showReport(report: Report | null): void {
	shown = report;
	if (!content) { return; }
	if (!report) { page.say(strings.waiting, 'placeholder'); return; }
	// renderReportHtml escapes every value; the CSP forbids inline script regardless.
	content.innerHTML = renderReportHtml(report, { strings, interactive: true, formatTime: localTime });
	document.body.dataset.state = 'report';
}

function setBusy(busy: boolean, message: string): void {
	page.setBusy(busy, message);
	if (rerunButton) { rerunButton.disabled = busy; }
}

/** The viewer's local time for an ISO timestamp (the stored text when it does not parse). */
function localTime(iso: string): string {
	const d = new Date(iso);
	return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** Scroll to finding `index` and mark it for a moment. */
function revealFinding(index: number): void {
	const el = document.querySelector<HTMLElement>(`.finding[data-finding-index="${index}"]`);
	if (!el) { return; }
	el.scrollIntoView({ block: 'start' });
	el.classList.add('revealed');
	setTimeout(() => el.classList.remove('revealed'), 2500);
}

/** Open one raw output and scroll to line `line` of its stream (the pre is split into line spans on first use). */
function revealRawLine(rawId: string, stream: 'stdout' | 'stderr', line: number | undefined): void {
	const details = Array.from(document.querySelectorAll<HTMLDetailsElement>('details.raw-output')).find(d => d.dataset.rawId === rawId);
	if (!details) { return; }
	details.open = true;
	const pre = details.querySelector<HTMLElement>(`.raw-stream[data-stream="${stream}"] pre`);
	if (!pre || line === undefined) { details.scrollIntoView({ block: 'start' }); return; }
	if (!pre.dataset.lines) {
		const text = pre.textContent ?? '';
		pre.textContent = '';
		text.split('\n').forEach((l, i, all) => {
			const span = document.createElement('span');
			span.className = 'raw-line';
			span.dataset.line = String(i + 1);
			span.textContent = i < all.length - 1 ? `${l}\n` : l;
			pre.appendChild(span);
		});
		pre.dataset.lines = 'split';
	}
	pre.querySelectorAll('.raw-line-target').forEach(x => x.classList.remove('raw-line-target'));
	const span = pre.querySelector<HTMLElement>(`.raw-line[data-line="${line}"]`);
	if (!span) { details.scrollIntoView({ block: 'start' }); return; }
	span.classList.add('raw-line-target');
	span.scrollIntoView({ block: 'center' });
}

/** An evidence link: the file line in an editor (through the host), else the raw output's line here. */
function openEvidence(link: HTMLElement): void {
	const article = link.closest<HTMLElement>('.finding');
	const findingIndex = Number(article?.dataset.findingIndex);
	const evidenceIndex = Number(link.dataset.evidenceIndex);
	const ev = shown?.findings?.[findingIndex]?.evidence?.[evidenceIndex];
	if (!shown || !ev) { return; }
	const target = evidenceTarget(ev, shown.raw, shown.host?.kind ?? '');
	if (target?.kind === 'file') {
		void rpc.request({ type: 'openEvidence', findingIndex, evidenceIndex }).catch(() => {
			// The file cannot be opened (gone, unreadable): show what the collector read instead.
			const raw = evidenceTarget(ev, shown?.raw ?? [], 'not-local');
			if (raw?.kind === 'raw') { revealRawLine(raw.rawId, raw.stream, raw.line); }
		});
	} else if (target?.kind === 'raw') {
		revealRawLine(target.rawId, target.stream, target.line);
	}
}

page.routeClicks([
	['.evidence-link', (link, ev) => { ev.preventDefault(); openEvidence(link); }],
	['button.copy-button', copy => {
		rpc.request({ type: 'copy', text: copy.dataset.copy ?? '' }).then(
			() => { copy.textContent = strings.copied; copy.classList.add('copied'); },
			() => { copy.textContent = strings.copyFailed; },
		);
	}],
	['#rerun', () => { void rpc.request({ type: 'rerun' }).catch(() => undefined); }],
	['#save', () => { void rpc.request({ type: 'save' }).catch(() => undefined); }],
	['#compare', () => { void rpc.request({ type: 'compare' }).catch(() => undefined); }],
]);

if (rerunButton) { rerunButton.textContent = strings.rerun; }

rpc.request({ type: 'ready' }).then(
	r => {
		setBusy(r.busy, r.busy ? (page.busyEl?.textContent ?? '') : '');
		showReport(r.report);
		if (typeof r.revealFindingIndex === 'number') { revealFinding(r.revealFindingIndex); }
	},
	err => page.say(errorMessage(err), 'error-banner'),
);
