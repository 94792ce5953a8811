/**
 * Faults in what inspect reads (issue 15), through the real CLI process (`node bin/gpumpi-doctor.js inspect --json`):
 * - a 100 MB `ompi_info` output. A real ompi_info that big cannot be produced, so a FAKE `ompi_info` (a sh script)
 *   is put first on PATH: it prints the real Debian 12 `ompi_info --parsable --all` capture
 *   (test-fixtures/tools/debian12-cpu/ompi_info.txt) and then its parameter lines 180 times more (~105 MB). Every
 *   other tool is the real one. The report must still come out, the kept output be capped at proc.ts's 8 MiB, a
 *   finding say so, and the CLI's peak RSS stay bounded.
 * - an unreadable ~/.openmpi/mca-params.conf (HOME a temp dir). As root chmod 000 does not stop reads, so a
 *   DIRECTORY and a FIFO with no writer are put there, both real. The FIFO blocked the CLI's open() forever (and
 *   the CLI then ignored SIGTERM: its libuv thread stayed in open) — fixed in hosts/localHost.ts (O_NONBLOCK open,
 *   then fstat). Open MPI's own ompi_info and mpirun block on that FIFO too: they end at inspect's --timeout.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CLI = path.join(ROOT, 'bin', 'gpumpi-doctor.js');
const OMPI_INFO = path.join(ROOT, 'test-fixtures', 'tools', 'debian12-cpu', 'ompi_info.txt');
const TIME = '/usr/bin/time';

interface Finding { id: string; title: string; message: string }
interface Run { code: number | null; out: string; err: string; ms: number; peakKiB: number }

/** Run the real CLI with `env`; peak RSS from GNU time (-v) where installed, else from polling /proc/PID/status VmHWM. */
async function inspect(args: string[], env: NodeJS.ProcessEnv, dir: string): Promise<Run> {
	const timeFile = path.join(dir, `time-${Date.now()}.txt`);
	const viaTime = fs.existsSync(TIME);
	const argv = viaTime ? [TIME, '-v', '-o', timeFile, process.execPath, CLI, ...args] : [process.execPath, CLI, ...args];
	const started = Date.now();
	const child = spawn(argv[0], argv.slice(1), { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
	let out = '';
	let err = '';
	let polled = 0;
	child.stdout.on('data', d => { out += d; });
	child.stderr.on('data', d => { err += d; });
	const poll = viaTime ? undefined : setInterval(() => {
		try { polled = Math.max(polled, Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0)); } catch { /* ended */ }
	}, 20);
	const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
	const code = await new Promise<number | null>(res => child.on('close', c => res(c)));
	clearTimeout(killer);
	if (poll) { clearInterval(poll); }
	const peakKiB = viaTime ? Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(fs.readFileSync(timeFile, 'utf8'))?.[1] ?? 0) : polled;
	return { code, out, err, ms: Date.now() - started, peakKiB };
}

describe('faults in what inspect reads: a 100 MB ompi_info output, an unreadable MCA parameter file', function () {
	this.timeout(150_000);
	let dir = '';
	before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-faults-in-')); });
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	it('a 100 MB ompi_info output (a fake ompi_info first on PATH): report out, output capped at 8 MiB and said so, peak RSS bounded', async () => {
		const bin = path.join(dir, 'fake-bin');
		fs.mkdirSync(bin);
		// FAKE: no real ompi_info prints 100 MB. Real lines, repeated: the capture, then its parameter lines 180 times.
		fs.writeFileSync(path.join(bin, 'ompi_info'), `#!/bin/sh\ncat "$1"\ni=0\nwhile [ $i -lt 180 ]; do grep -v '^ompi:version\\|^package:' "$1"; i=$((i+1)); done\n`
			.replace(/"\$1"/g, `'${OMPI_INFO}'`), { mode: 0o755 });
		const bytes = spawnSync(path.join(bin, 'ompi_info'), { maxBuffer: 256 * 1024 * 1024 }).stdout.length;
		assert.ok(bytes > 100_000_000, `the fake printed only ${bytes} bytes`);
		const home = fs.mkdtempSync(path.join(dir, 'home-'));
		const r = await inspect(['inspect', '--json'], { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: home }, dir);
		console.log(`      ompi_info ${bytes} bytes: exit ${r.code} in ${r.ms} ms, peak RSS ${Math.round(r.peakKiB / 1024)} MiB, report ${r.out.length} bytes`);
		assert.equal(r.code, 0, r.err.slice(-2000));
		const rep = JSON.parse(r.out) as { findings: Finding[]; raw: Array<{ id: string; stdout: string }>; facts: { mpi: { openmpi?: { version?: { value: string } } } } };
		const kept = rep.raw.find(x => x.id === 'ompi_info')?.stdout ?? '';
		assert.ok(kept.length <= 8 * 1024 * 1024 + 200, `kept ${kept.length} chars of ompi_info (cap 8 MiB)`);
		assert.ok(kept.length > 4 * 1024 * 1024, `kept only ${kept.length} chars`);
		const dropped = Number(/\[… (\d+) bytes of output truncated by gpumpi-doctor …\]/.exec(kept)?.[1] ?? 0);
		assert.ok(dropped > bytes - 8 * 1024 * 1024 - 1024 && dropped <= bytes - 8 * 1024 * 1024, `dropped ${dropped} of ${bytes}`);
		assert.ok(rep.findings.some(f => /ompi_info --parsable --all: its output was larger than the cap .* (\d+) bytes in the middle were dropped/.test(f.message)),
			`no finding says the output was cut: ${rep.findings.map(f => f.message.slice(0, 120)).join(' | ')}`);
		// The head of the capture survives the cut, so the version is still known.
		assert.equal(rep.facts.mpi.openmpi?.version?.value, '4.1.4');
		assert.ok(r.peakKiB > 0, 'peak RSS not measured');
		assert.ok(r.peakKiB < 1024 * 1024, `peak RSS ${r.peakKiB} KiB (bound 1 GiB)`);
	});

	for (const kind of ['directory', 'FIFO with no writer'] as const) {
		it(`~/.openmpi/mca-params.conf a ${kind}: inspect ends in bounded time and says it could not read the file`, async () => {
			const home = fs.mkdtempSync(path.join(dir, 'home-'));
			const file = path.join(home, '.openmpi', 'mca-params.conf');
			fs.mkdirSync(path.dirname(file));
			if (kind === 'directory') { fs.mkdirSync(file); } else { assert.equal(spawnSync('mkfifo', [file]).status, 0, 'mkfifo failed'); }
			// --timeout 5: Open MPI's ompi_info and mpirun block on the FIFO themselves (real), each killed after 5 s.
			const r = await inspect(['inspect', '--json', '--timeout', '5'], { ...process.env, HOME: home }, dir);
			console.log(`      ${kind}: exit ${r.code} in ${r.ms} ms`);
			assert.equal(r.code, 0, r.err.slice(-2000));
			assert.ok(r.ms < 60_000, `took ${r.ms} ms`);
			const rep = JSON.parse(r.out) as { findings: Finding[] };
			const what = kind === 'directory' ? 'a directory' : 'a FIFO \\(named pipe\\)';
			const said = rep.findings.find(f => new RegExp(`read ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not a regular file \\(${what}\\); Open MPI reads this file`).test(f.message));
			assert.ok(said, `no finding says the file could not be read: ${rep.findings.map(f => f.message.slice(0, 160)).join(' | ')}`);
		});
	}
});
