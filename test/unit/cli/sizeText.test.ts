/**
 * The one size syntax (extension/shared/sizeText.ts) used by the CLI and the VS Code reproducer commands: values,
 * the ×4 range expansion the engine does (native/engine/reproFallback.cc parseSizeList), and the engine's limits.
 */
import * as assert from 'node:assert/strict';
import { checkSize, checkSizes } from '../../../extension/core/repro/reproChoices';
import {
	checkSizeListText, checkSizeText, FALLBACK_SIZE_LIMITS, formatSize, IPC_SIZE_LIMITS, parseSize,
} from '../../../extension/shared/sizeText';

const M = 1 << 20;

describe('size text', () => {
	it('parses counts with K/M/G and refuses everything else', () => {
		assert.equal(parseSize('4096'), 4096);
		assert.equal(parseSize('64K'), 64 * 1024);
		assert.equal(parseSize('64M'), 64 * M);
		assert.equal(parseSize('1G'), 1 << 30);
		for (const bad of ['', 'M', '64 M', ' 64M', '64m', '64MiB', '-1', '1.5M', '0x10', '1e3', '99999999999999999999', '9007199254740993G', '１２']) {
			assert.equal(parseSize(bad), null, JSON.stringify(bad));
		}
	});
	it('formats the shortest exact text', () => {
		assert.deepEqual([1 << 30, 64 * M, 4096, 1000, 3 * 1024 + 1].map(formatSize), ['1G', '64M', '4K', '1000', '3073']);
	});
	it('expands ranges as the engine does: ×4 steps, the upper bound always included', () => {
		assert.deepEqual(checkSizeListText('1M..1G', FALLBACK_SIZE_LIMITS), [1, 4, 16, 64, 256, 1024].map(x => x * M));
		assert.deepEqual(checkSizeListText('1M..2M', FALLBACK_SIZE_LIMITS), [M, 2 * M]);
		assert.deepEqual(checkSizeListText('64M..64M', FALLBACK_SIZE_LIMITS), [64 * M]);
		assert.deepEqual(checkSizeListText('4K,64M', FALLBACK_SIZE_LIMITS), [4096, 64 * M]);
		assert.equal(checkSizeListText('4..1024G', FALLBACK_SIZE_LIMITS).length, 20);
	});
	it('refuses empty or reversed ranges, bad items, sizes the engine refuses, and too many sizes', () => {
		for (const [text, re] of [
			['1G..1M', /the range 1G\.\.1M is empty/], ['0..1M', /is empty/], ['1M..', /a range like/], ['1M,,4M', /"" is not a size/],
			['6', /multiple of 4 bytes/], ['2048G', /2048G is not/], [Array(65).fill('4').join(','), /at most 64 sizes/],
		] as Array<[string, RegExp]>) {
			const r = checkSizeListText(text, FALLBACK_SIZE_LIMITS);
			assert.equal(typeof r, 'string', text);
			assert.match(r as string, re);
		}
		assert.equal(checkSizeText('1G', IPC_SIZE_LIMITS), 1 << 30);
		assert.match(checkSizeText('2G', IPC_SIZE_LIMITS) as string, /from 4 to 1G \(2G is not\)/);
	});
	it('the VS Code input validation uses the same rules', () => {
		assert.equal(checkSize('64M'), null);
		assert.match(checkSize('2G') ?? '', /2G is not/);
		assert.equal(checkSizes('1M..256M'), null);
		assert.match(checkSizes('1G..1M') ?? '', /is empty/);
	});
});
