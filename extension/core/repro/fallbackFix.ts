/**
 * The fix the fallback verdict hands over: the C lines that replace MPI_Isend/MPI_Irecv for one peer with libgpumpi
 * (native/include/gpumpi.h), started once with the user's persistent staging buffer, and the build lines for the
 * installed package (docs/library.md, "Installed package"). The three parts are separate so a harness can place
 * them (test/engine/fallbackFix.test.ts compiles exactly these strings with mpicc against an installed libgpumpi).
 * The snippet uses the variables sendbuf, recvbuf, bytes (size_t), peer and tag of the user's code.
 */

/** The libgpumpi mode a recommendation is for (the reproducer's stable names, docs/repro-schema.md). */
export type LibFixMode = 'lib-auto' | 'lib-staged' | 'lib-shm';

/** What the user pastes: once at start, per exchange, once at the end; and how to build. */
export interface LibFix {
	mode: LibFixMode;
	setup: string;
	exchange: string;
	teardown: string;
	/** setup + exchange + teardown with their placement comments: what "Copy code" copies. */
	code: string;
	build: string[];
	/** native/examples/staged_exchange.c: the complete program. */
	example: string;
}

const FLAGS: Record<LibFixMode, string> = { 'lib-auto': '0', 'lib-staged': 'GPUMPI_FORCE_STAGED', 'lib-shm': 'GPUMPI_FORCE_SHM' };

/** The fix for a libgpumpi mode, with the chunk and slot count the reproducer measured. */
export function libFix(mode: LibFixMode, chunkBytes = 16 << 20, nbuf = 4, mpiFlavor: 'openmpi' | 'mpich' | 'unknown' = 'unknown'): LibFix {
	const chunkMiB = Math.max(1, Math.round(chunkBytes / (1 << 20)));
	const setup = [
		'gpumpi_config cfg;',
		'gpumpi_config_default(&cfg);',
		`cfg.chunk_bytes = (size_t)${chunkMiB} << 20;`,
		`cfg.num_buffers = ${nbuf};`,
		...(mode === 'lib-shm' ? ['cfg.flags = GPUMPI_FORCE_SHM; /* shared segments to same-host peers (every rank sets it) */'] : []),
		'gpumpi_ctx* ctx = NULL;',
		'if (gpumpi_init(MPI_COMM_WORLD, &cfg, &ctx) != GPUMPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1); /* collective */',
		'size_t staging_bytes = cfg.chunk_bytes * (size_t)cfg.num_buffers;',
		'void* staging = malloc(staging_bytes); /* your persistent buffer: the library pins it once, it never grows */',
		'if (gpumpi_register_staging(ctx, staging, staging_bytes, GPUMPI_STAGING_PIN) != GPUMPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);',
	].join('\n');
	const f = FLAGS[mode];
	const exchange = [
		'gpumpi_request* reqs[2];',
		`if (gpumpi_irecv_ex(ctx, recvbuf, bytes, peer, tag, ${f}, &reqs[0]) != GPUMPI_SUCCESS ||`,
		`    gpumpi_isend_ex(ctx, sendbuf, bytes, peer, tag, ${f}, &reqs[1]) != GPUMPI_SUCCESS ||`,
		'    gpumpi_waitall(ctx, 2, reqs) != GPUMPI_SUCCESS) {',
		'	fprintf(stderr, "gpumpi: %s\\n", gpumpi_last_error(ctx));',
		'	MPI_Abort(MPI_COMM_WORLD, 1);',
		'}',
	].join('\n');
	const teardown = ['gpumpi_finalize(&ctx); /* collective: unpins the staging buffer */', 'free(staging);'].join('\n');
	const code = [
		'#include "gpumpi.h" /* plus <stdio.h>, <stdlib.h> */',
		'',
		'/* Once, after MPI_Init (set the CUDA device before MPI_Init, as for CUDA-aware MPI): */',
		setup,
		'',
		'/* Instead of MPI_Irecv(recvbuf, ...) + MPI_Isend(sendbuf, ...) + MPI_Waitall for this peer (device or host buffers,',
		'   any size; both ranks pass the same bytes, tag and flags): */',
		exchange,
		'',
		'/* Once, before MPI_Finalize: */',
		teardown,
		'',
	].join('\n');
	const mpicc = mpiFlavor === 'openmpi' ? 'mpicc.openmpi' : mpiFlavor === 'mpich' ? 'mpicc.mpich' : 'mpicc';
	const build = [
		`cmake --install native/build/engine${mpiFlavor === 'unknown' ? '' : `-${mpiFlavor}`} --prefix $HOME/opt/gpumpi   # once: the library built with this MPI`,
		'export PKG_CONFIG_PATH=$HOME/opt/gpumpi/lib/pkgconfig',
		`${mpicc} app.c $(pkg-config --cflags --libs gpumpi) -o app`,
		'# CMake: find_package(gpumpi 0.1 REQUIRED) + target_link_libraries(app PRIVATE gpumpi::gpumpi), -DCMAKE_PREFIX_PATH=$HOME/opt/gpumpi',
	];
	return { mode, setup, exchange, teardown, code, build, example: 'native/examples/staged_exchange.c' };
}

/** The IPC verdict's "bounce" fix: the exporter sends a handle; the importer opens it once and lets gpumpi_irecv
 *  receive into it (through the library's device bounce buffer, never handing the imported pointer to MPI). */
export function ipcBounceFix(): { exporter: string; importer: string; code: string; example: string } {
	const exporter = [
		'gpumpi_ipc_handle h;',
		'if (gpumpi_ipc_export(ctx, dev_ptr, &h) != GPUMPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);',
		'MPI_Send(&h, sizeof h, MPI_BYTE, importer, tag, MPI_COMM_WORLD);',
	].join('\n');
	const importer = [
		'gpumpi_ipc_handle h;',
		'MPI_Recv(&h, sizeof h, MPI_BYTE, exporter, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);',
		'void* peer_mem = NULL;',
		'gpumpi_request* r = NULL;',
		'if (gpumpi_ipc_open(ctx, &h, &peer_mem) != GPUMPI_SUCCESS ||',
		'    gpumpi_irecv(ctx, peer_mem, bytes, sender, tag, &r) != GPUMPI_SUCCESS ||',
		'    gpumpi_wait(ctx, &r) != GPUMPI_SUCCESS) {',
		'	fprintf(stderr, "gpumpi: %s\\n", gpumpi_last_error(ctx));',
		'	MPI_Abort(MPI_COMM_WORLD, 1);',
		'}',
		'gpumpi_ipc_close(ctx, peer_mem); /* when done with it */',
	].join('\n');
	const code = [
		'#include "gpumpi.h" /* ctx from gpumpi_init, as for the staging fix */',
		'',
		'/* Exporter (owns the GPU memory dev_ptr): send the handle as plain bytes */',
		exporter,
		'',
		'/* Importer: open it once; the sender (any rank) sends with gpumpi_isend as usual */',
		importer,
		'',
	].join('\n');
	return { exporter, importer, code, example: 'native/examples/staged_exchange.c' };
}
