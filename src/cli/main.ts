import packageJson from '../../package.json';
import { commands } from './commands/index';
import type { CliIo } from './command';

// esbuild inlines the manifest's version, so the CLI and the VSIX never disagree.
const VERSION: string = packageJson.version;

function usage(): string {
  const lines = ['usage: remote-finetune <command> [options]', '', 'commands:'];
  for (const c of commands) lines.push(`  ${c.name.padEnd(10)} ${c.summary}`);
  lines.push('  --version  print the version', '  --help     this text');
  return lines.join('\n') + '\n';
}

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V') {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    io.stdout(usage());
    return name === undefined ? 2 : 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.stderr(`remote-finetune: unknown command '${name}'\n${usage()}`);
    return 2;
  }
  return command.run(rest, io);
}

if (require.main === module) {
  const io: CliIo = {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    cwd: process.cwd(),
    env: process.env,
  };
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`remote-finetune: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
