/**
 * Reproducer results webview client: asks the host for its state with `ready`, renders the results with
 * render.ts, follows showRepro/reproBusy events, and turns clicks into `copyBugReport` / `copy` requests.
 * No inline script or style: the CSP allows only this nonce'd bundle and repro.css.
 */
import { MessageHandler } from '../../extension/shared/protocol';
import {
	asToReproWebviewEnvelope, type CopyBugReportResponse, type FromReproWebviewMessage, type ReproPanelData,
	type ReproReadyResponse, type ToReproWebviewMessage,
} from '../../extension/shared/reproProtocol';
import { renderReproHtml } from './render';

interface VsCodeApi { postMessage(message: unknown): void }
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const content = document.getElementById('content');
const busyEl = document.getElementById('busy');
const copyButton = document.getElementById('copy-bug-report') as HTMLButtonElement | null;

const rpc = new MessageHandler<FromReproWebviewMessage, ToReproWebviewMessage>(
	env => vscode.postMessage(env),
	msg => {
		if (msg.type === 'showRepro') { show(msg.data); } else if (msg.type === 'reproBusy') { setBusy(msg.busy, msg.message); }
		return undefined;
	},
);

window.addEventListener('message', ev => {
	const env = asToReproWebviewEnvelope(ev.data);
	if (env) { void rpc.handleMessage(env); }
});

function show(data: ReproPanelData | null): void {
	if (!content) { return; }
	if (!data) {
		content.textContent = '';
		const p = document.createElement('p');
		p.className = 'placeholder';
		p.textContent = 'No results yet. Run "GPU-MPI: Run IPC-Pointer Reproducer", "GPU-MPI: Run Fallback Reproducer" or "GPU-MPI: Open Reproducer Result…".';
		content.appendChild(p);
		if (copyButton) { copyButton.disabled = true; }
		return;
	}
	// renderReproHtml escapes every value; the CSP forbids inline script regardless.
	content.innerHTML = renderReproHtml(data);
	document.body.dataset.state = 'results';
	if (copyButton) { copyButton.disabled = false; }
}

function setBusy(busy: boolean, message: string): void {
	if (busyEl) { busyEl.hidden = !busy; busyEl.textContent = message; }
	document.body.dataset.busy = busy ? 'true' : 'false';
}

document.addEventListener('click', ev => {
	const target = ev.target instanceof Element ? ev.target : null;
	if (target?.closest('#copy-bug-report') && copyButton) {
		const label = copyButton.textContent ?? '';
		rpc.sendRequest<CopyBugReportResponse>({ type: 'copyBugReport' }).then(
			r => { copyButton.textContent = `Copied (${r.chars} characters)`; setTimeout(() => { copyButton.textContent = label; }, 2500); },
			e => { copyButton.textContent = `Copy failed: ${e instanceof Error ? e.message : String(e)}`; },
		);
		return;
	}
	const mark = target?.closest<HTMLButtonElement>('button.trial, button.open-log');
	if (mark) {
		const trial = Number(mark.dataset.trial);
		rpc.sendRequest<void>({ type: 'openTrialLog', config: mark.dataset.config ?? '', variant: mark.dataset.variant ?? '', trial }).then(
			() => { mark.classList.add('opened'); },
			e => { mark.title = `Cannot open the log: ${e instanceof Error ? e.message : String(e)}`; },
		);
		return;
	}
	const ev2 = target?.closest<HTMLButtonElement>('button.copy-evidence');
	if (ev2) {
		rpc.sendRequest<void>({ type: 'copy', text: ev2.dataset.copy ?? '' }).then(() => { ev2.textContent = 'Copied'; }, () => { ev2.textContent = 'Copy failed'; });
	}
});

rpc.sendRequest<ReproReadyResponse>({ type: 'ready' }).then(
	r => { setBusy(r.busy, ''); show(r.data); },
	err => { if (content) { content.textContent = String(err instanceof Error ? err.message : err); } },
);
