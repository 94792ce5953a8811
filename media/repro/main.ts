/**
 * Reproducer results webview client: asks the host for its state with `ready`, renders the results with
 * render.ts, follows showRepro/reproBusy events, and turns clicks into `copyBugReport` / `copy` requests.
 * No inline script or style: the CSP allows only this nonce'd bundle and repro.css.
 */
import {
	DEFAULT_REPRO_STRINGS, REPRO_PROTOCOL, type ReproPanelData, type ReproRequests, type ToReproWebviewMessage,
} from '../../extension/shared/reproProtocol';
import { fill } from '../../extension/shared/webviewStrings';
import { errorMessage, startWebview } from '../shared/webviewPage';
import { renderReproHtml } from './render';

const page = startWebview<ToReproWebviewMessage, ReproRequests, typeof DEFAULT_REPRO_STRINGS>(REPRO_PROTOCOL, DEFAULT_REPRO_STRINGS, msg => {
	if (msg.type === 'showRepro') { show(msg.data); } else { setBusy(msg.busy, msg.message); }
});
const { rpc, strings, content } = page;
const copyButton = document.getElementById('copy-bug-report') as HTMLButtonElement | null;
const saveButton = document.getElementById('save-results') as HTMLButtonElement | null;

let busyNow = false;

/** The placeholder before any result: what to run, or, while a run is in flight, that it runs. */
function placeholderText(): string { return busyNow ? strings.running : strings.noResults; }

function show(data: ReproPanelData | null): void {
	if (!content) { return; }
	if (copyButton) { copyButton.disabled = !data; }
	if (saveButton) { saveButton.disabled = !data; }
	if (!data) { page.say(placeholderText(), 'placeholder'); return; }
	// renderReproHtml escapes every value; the CSP forbids inline script regardless.
	content.innerHTML = renderReproHtml(data);
	document.body.dataset.state = 'results';
}

function setBusy(busy: boolean, message: string): void {
	busyNow = busy;
	page.setBusy(busy, message);
	const placeholder = content?.querySelector('p.placeholder');
	if (placeholder) { placeholder.textContent = placeholderText(); }
}

page.routeClicks([
	['#save-results', () => { void rpc.request({ type: 'saveResults' }).catch(() => undefined); }],
	['#copy-bug-report', () => {
		if (!copyButton) { return; }
		const label = copyButton.textContent ?? '';
		rpc.request({ type: 'copyBugReport' }).then(
			r => { copyButton.textContent = fill(strings.copiedChars, r.chars); setTimeout(() => { copyButton.textContent = label; }, 2500); },
			e => { copyButton.textContent = fill(strings.copyFailedBecause, errorMessage(e)); },
		);
	}],
	['button.trial, button.open-log', mark => {
		rpc.request({ type: 'openTrialLog', config: mark.dataset.config ?? '', variant: mark.dataset.variant ?? '', trial: Number(mark.dataset.trial) }).then(
			() => { mark.classList.add('opened'); },
			(e: unknown) => { mark.title = `Cannot open the log: ${errorMessage(e)}`; },
		);
	}],
	['button.open-example', ex => {
		rpc.request({ type: 'openExample' }).then(() => { ex.classList.add('opened'); }, (e: unknown) => { ex.title = `Cannot open it: ${errorMessage(e)}`; });
	}],
	['button.copy-evidence', ev => {
		rpc.request({ type: 'copy', text: ev.dataset.copy ?? '' }).then(() => { ev.textContent = strings.copied; }, () => { ev.textContent = strings.copyFailed; });
	}],
]);

rpc.request({ type: 'ready' }).then(
	r => { setBusy(r.busy, ''); show(r.data); },
	err => page.say(errorMessage(err), 'error-banner'),
);
