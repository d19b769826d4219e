import { statSync } from 'node:fs';
import path from 'node:path';

/**
 * The directory this process runs in, spelled as the shell that started it spells it.
 * `process.cwd()` is the kernel's answer, with every symlink resolved, while MiniMax Code records a
 * session's workspace as it was reached (`~/src/app` where `~/src` links to `/data/src`; macOS's
 * `/tmp`, really `/private/tmp`): a project named by the resolved path matches none of its
 * conversations. `$PWD` is kept by shells, and by a program started from one, as the path walked;
 * it is taken only when it is absolute and names this very directory (a `$PWD` left over from
 * another directory, which a parent that changed directory without updating it passes on, is not).
 */
export function workingDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const physical = process.cwd();
  const logical = env.PWD;
  if (logical === undefined || !path.isAbsolute(logical) || logical === physical) return physical;
  try {
    const here = statSync(physical);
    const there = statSync(logical);
    return here.dev === there.dev && here.ino === there.ino ? path.normalize(logical) : physical;
  } catch {
    return physical;
  }
}
