/** One CLI subcommand. `run` returns the process exit code: 0 ok, 1 findings/failure, 2 bad usage. */
export interface CliCommand {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  run(args: readonly string[], io: CliIo): Promise<number>;
}

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly cwd: string;
  /** The environment cloud credentials and regions are read from; process.env when absent. */
  readonly env?: NodeJS.ProcessEnv;
}
