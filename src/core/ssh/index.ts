// The remote execution spine, on ssh2 (loaded lazily). What the run lifecycle uses:
//
//   const host = new SshHost({ host: 'lambda-a100' }, { hostKeyStore, confirmHostKey, askPassphrase });
//   const s = await host.session();            // connect: ~/.ssh/config (Include, Match, ProxyJump…), agent,
//                                              // encrypted keys, known_hosts + own store; reconnects with backoff
//   await host.use((s) => runStatus(s, id));   // idempotent calls retried once over a fresh connection
//   await probeGpus(s)                         // { kind: 'nvidia', gpus, count, driverVersion, cudaVersion } | { kind: 'none', reason }
//   await syncWorkspace(s, { localRoot, remoteDir, cacheFile, confirmLarge })   // incremental, one tar stream
//   await startDetached(s, { runId, command, env, cwd, spec })  // writes wrapper/command/spec and the 0600
//                                              // env file (writeSecretsFile), starts detached → { runDir, pid }
//   await runStatus(s, runId) / stopRun(s, runId, { graceMs }) / listRuns(s)
//   for await (const item of tailFile(host, `${runDir}/output.log`, { fromOffset, untilPid })) …
//                                              // { kind: 'data', offset, nextOffset, data } | 'truncated' | 'reconnected'
//
// Every remote command line is built with shellQuote/shellCommand; secrets go only through the env file.
export { connect, SshSession, SshFatalError } from './session';
export { loadSsh2 } from './ssh2Module';
export type { SshTarget, ConnectOptions, HostKeyPrompt, ExecResult, ExecOptions } from './session';
export { SshHost } from './reconnect';
export type { BackoffOptions } from './reconnect';
export { shellQuote, shellCommand, shellPath } from './quote';
export { resolveHost, listConfiguredHosts, parseHostSpec } from './sshConfig';
export type { ResolvedHost, SshConfigSource } from './sshConfig';
export { checkHostKey, fingerprintSha256, rememberHostKey } from './knownHosts';
export type { HostKeyVerdict } from './knownHosts';
export { startDetached, runStatus, stopRun, listRuns, remoteRoot, runDirOf, isValidRunId, detectLauncher } from './runs';
export type { StartOptions, StartedRun, HostRunStatus, RunState, Launcher } from './runs';
export { writeSecretsFile, renderEnvFile } from './secrets';
export { tailFile, splitLines, tailCommand } from './tail';
export type { TailItem, TailOptions } from './tail';
export { syncWorkspace, defaultRemoteDir } from './sync';
export { manifestPathFor } from './syncRemote';
export type { SyncOptions, SyncResult } from './sync';
export { scanWorkspace, largeContentWarnings } from './localManifest';
export type { LocalFile, LargeContentWarning } from './localManifest';
export { probeGpus, parseGpuProbe, describeGpus } from './gpuProbe';
export type { GpuProbeResult, ProbedGpu } from './gpuProbe';
export { writeFileAtomic } from './remoteFiles';
