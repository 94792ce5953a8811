/**
 * What the VS Code extension runs on demand, bundled on its own into dist/core.js and loaded on the first command
 * (extension/vscode/lazyCore.ts): the collector, parsers, rules, ssh deploy, reproducer and map runners. They are
 * ~85% of the extension's code, and evaluating them at activation was most of our share of the activation time
 * (docs/benchmarks.md). Everything here is data in, data out: no class identity crosses the two bundles.
 */
export { reportFromBundle } from './bundle';
export { LocalHost } from './hosts/localHost';
export { openRemoteTarget, testConnection } from './hosts/remoteTarget';
export { resolveLaunchTarget } from './hosts/launchTarget';
export { guardInspectionReport } from './guard/guardResult';
export { splitArgLine } from './guard/guardRunner';
export { guardTaskArgv } from './guard/guardTask';
export { runGuardUseCase } from './guard/guardUseCase';
export { inspectHost } from './inspect';
export { DEFAULT_MAP_OPTIONS } from './map/mapRunner';
export { runMapUseCase } from './map/mapUseCase';
export { setSessionRecorder } from './proc';
export { bugReportMarkdown } from './repro/bugReport';
export { loadReproText, reproResultsDocument } from './repro/reproFile';
export { reproComparableText } from './repro/reproRender';
export { runReproUseCase } from './repro/reproUseCase';
