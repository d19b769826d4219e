import { h, type Html } from './html.js';
import type { ViewerPaths } from './paths.js';

export type NavKey = 'projects' | 'search' | 'warnings' | 'agent' | 'health' | 'forgotten';

const NAV: Array<[NavKey, `/${string}`, string]> = [
  ['projects', '/', 'Projects'],
  ['search', '/search', 'Search'],
  ['warnings', '/warnings', 'Warnings'],
  ['agent', '/agent', 'What the agent sees'],
  ['health', '/health', 'Capture health'],
  ['forgotten', '/forgotten', 'Forgotten'],
];

export interface PageFrame {
  title: string;
  /** Where this launch's pages are: every link of the shell is built from it. */
  paths: ViewerPaths;
  nav?: NavKey;
  /** Set when a credential is configured: memories also go to the hosted gateway. */
  gatewayBase?: string;
}

/** The page shell: one stylesheet and one script, both from this origin (the CSP allows nothing else). */
export function layout(frame: PageFrame, body: Html): Html {
  const links = NAV.map(
    ([key, href, label]) => h`<li><a href="${frame.paths.to(href)}"${key === frame.nav ? h` aria-current="page"` : ''}>${label}</a></li>`,
  );
  const banner = frame.gatewayBase
    ? h`<p class="banner" role="note">Memories are also sent to the EverMe gateway (${frame.gatewayBase}). This page shows what this machine holds; forgetting here cannot reach what the gateway already received.</p>`
    : '';
  return h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${frame.title} · everme</title>
<link rel="stylesheet" href="${frame.paths.to('/assets/viewer.css')}">
<link rel="icon" href="${frame.paths.to('/favicon.ico')}">
<script type="module" src="${frame.paths.to('/assets/viewer.js')}"></script>
</head>
<body>
<header><span class="brand">everme</span><nav aria-label="Sections"><ul>${links}</ul></nav></header>
<main id="main">
${banner}
${body}
</main>
</body>
</html>`;
}

/** A hidden field carrying the launch secret: a state-changing request must carry it in its body too, not only in its path. */
export function secretField(secret: string): Html {
  return h`<input type="hidden" name="_secret" value="${secret}">`;
}
