/**
 * The real CLI (`node bin/gpumpi-doctor.js …`) as a separate process for the fault tests: started as its own process
 * group (as a shell starts a foreground job) so Ctrl-C can be sent the way a terminal sends it, with every process it
 * starts recorded while it runs (pid + start time, from /proc) so "nothing left" can be checked after it ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sleep } from './faultHelpers';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CLI = path.join(ROOT, 'bin', 'gpumpi-doctor.js');

/** One process of /proc (zombies left out). */
export interface Proc { pid: number; ppid: number; start: string; argv: string }

export function procTable(): Proc[] {
	const out: Proc[] = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d)) { continue; }
		try {
			const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
			const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
			if (f[0] === 'Z') { continue; }
			const argv = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ').trim();
			out.push({ pid: Number(d), ppid: Number(f[1]), start: f[19], argv });
		} catch { /* gone */ }
	}
	return out;
}

/** The CLI under test: its own process group; every descendant seen while it runs is recorded (pid + start time). */
export class CliRun {
	readonly child: ChildProcess;
	stdout = '';
	stderr = '';
	readonly seen = new Map<string, Proc>();
	readonly closed: Promise<number | null>;
	private done = false;
	constructor(args: string[], cwd: string) {
		this.child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
		this.child.stdout!.on('data', d => { this.stdout += d; });
		this.child.stderr!.on('data', d => { this.stderr += d; });
		this.closed = new Promise(res => this.child.on('close', c => { this.done = true; res(c); }));
		void this.watch();
	}
	/** Descendants now (by ppid from the CLI's pid); also recorded. */
	descendants(): Proc[] {
		const table = procTable();
		const mine = new Set<number>([this.child.pid!]);
		const found: Proc[] = [];
		for (let grew = true; grew;) {
			grew = false;
			for (const p of table) { if (!mine.has(p.pid) && mine.has(p.ppid)) { mine.add(p.pid); found.push(p); grew = true; } }
		}
		for (const p of found) { this.seen.set(`${p.pid}/${p.start}`, p); }
		return found;
	}
	private async watch(): Promise<void> { while (!this.done) { this.descendants(); await sleep(15); } }
	/** Ctrl-C as a terminal sends it: SIGINT to the whole foreground process group. */
	interrupt(): void { process.kill(-this.child.pid!, 'SIGINT'); }
	/** Recorded descendants still alive (same pid and start time), after up to `ms`. */
	async left(ms = 5000): Promise<string[]> {
		const end = Date.now() + ms;
		for (;;) {
			const alive = new Map(procTable().map(p => [`${p.pid}/${p.start}`, p]));
			const left = [...this.seen.keys()].filter(k => alive.has(k)).map(k => `${k} ${alive.get(k)!.argv.slice(0, 140)}`);
			if (left.length === 0 || Date.now() > end) { return left; }
			await sleep(200);
		}
	}
	/** Wait until `pred` holds for a descendant (polling every 10 ms). */
	async waitFor(pred: (p: Proc) => boolean, ms = 30_000): Promise<Proc | null> {
		const end = Date.now() + ms;
		while (Date.now() < end && !this.done) {
			const hit = this.descendants().find(pred);
			if (hit) { return hit; }
			await sleep(10);
		}
		return null;
	}
}

export function filesOf(dir: string): Record<string, string> {
	const out: Record<string, string> = {};
	const walk = (rel: string): void => {
		for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
			const r = path.join(rel, e.name);
			if (e.isDirectory()) { walk(r); } else { out[r] = fs.readFileSync(path.join(dir, r), 'utf8'); }
		}
	};
	walk('');
	return out;
}
