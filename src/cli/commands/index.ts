import type { CliCommand } from '../command';
import { validateCommand } from './validate';
import { estimateCommand } from './estimate';
import { offersCommand } from './offers';

/** Every subcommand the CLI knows; each lives in its own file beside this one. */
export const commands: readonly CliCommand[] = [validateCommand, estimateCommand, offersCommand];
