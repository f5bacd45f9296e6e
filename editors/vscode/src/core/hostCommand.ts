/**
 * Which program starts the host. `oma.host.command` when it is set; else the
 * first executable of: `oma-host` on PATH, then, in each workspace folder,
 * `.venv/bin/oma-host` and `venv/bin/oma-host`. A host installed with pip in
 * the project's virtual environment is found that way although VS Code's PATH
 * holds the environment's `bin` only when it was activated before VS Code
 * started. The host is spawned as that program directly (no `python -m`):
 * pip puts the `oma-host` script in every environment it installs into.
 */

import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export const HOST_PROGRAM = 'oma-host';

/** The workspace-relative places looked in, after PATH, in this order. */
export const VENV_PROGRAMS = [join('.venv', 'bin', HOST_PROGRAM), join('venv', 'bin', HOST_PROGRAM)];

export interface HostCommand {
  /** What is spawned: the setting, a full path found, or `oma-host` when nothing was found. */
  command: string;
  /** How it was chosen, for the output channel. */
  how: string;
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The host command for `setting` (`oma.host.command`; empty or blank when not
 * set), looking in `folders` (the workspace folders' paths, in order) and in
 * the directories of `path` (PATH).
 */
export function findHostCommand(
  setting: string,
  folders: readonly string[],
  path: string | undefined,
): HostCommand {
  if (setting.trim() !== '') {
    return { command: setting.trim(), how: 'oma.host.command' };
  }
  for (const directory of (path ?? '').split(delimiter)) {
    const candidate = join(directory, HOST_PROGRAM);
    if (directory !== '' && isExecutableFile(candidate)) {
      return { command: candidate, how: 'found on PATH (oma.host.command is not set)' };
    }
  }
  const tried = ['PATH'];
  for (const folder of folders) {
    for (const relative of VENV_PROGRAMS) {
      const candidate = join(folder, relative);
      if (isExecutableFile(candidate)) {
        const how = 'found in the workspace (oma.host.command is not set; not on PATH)';
        return { command: candidate, how };
      }
      tried.push(candidate);
    }
  }
  return {
    command: HOST_PROGRAM,
    how: `not found: oma.host.command is not set and no executable oma-host is in ${tried.join(', ')}`,
  };
}
