/**
 * The viewer's one stylesheet, served from the viewer itself (`/assets/viewer.css`): the strict
 * Content-Security-Policy allows styles from this origin only, and nothing is fetched from
 * elsewhere (no web fonts: the system's own).
 */
export const VIEWER_CSS = `
:root { color-scheme: light dark; --fg: #1d232a; --muted: #5b6670; --line: #d5dbe0; --bg: #fff; --panel: #f4f6f8;
  --accent: #1f5fbf; --mark: #ffe58a; --warn: #9a3b00; --ok: #1c6b35; --user: #e8f0fe; --assistant: #f1f8e9; --tool: #f5f5f5; }
@media (prefers-color-scheme: dark) { :root { --fg: #e4e8ec; --muted: #9aa5b1; --line: #3a434c; --bg: #15191d; --panel: #1e2429;
  --accent: #7fb0ff; --mark: #6b5a00; --warn: #ffb37a; --ok: #8fd9a8; --user: #1b2a40; --assistant: #1f2d1c; --tool: #23282d; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, summary:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 1rem; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); background: var(--panel); }
header .brand { font-weight: 700; }
nav ul { display: flex; flex-wrap: wrap; gap: .9rem; list-style: none; margin: 0; padding: 0; }
nav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
main { padding: 1rem 1.2rem 3rem; max-width: 72rem; }
h1 { font-size: 1.4rem; margin: .3rem 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.4rem 0 .5rem; }
.muted { color: var(--muted); }
.banner { border: 1px solid var(--warn); color: var(--warn); padding: .5rem .8rem; border-radius: 6px; margin: .6rem 0; }
.ok { color: var(--ok); }
.notice { border: 1px solid var(--line); border-left: 4px solid var(--accent); background: var(--panel); padding: .4rem .8rem; border-radius: 6px; margin: .6rem 0; }
.notice p { margin: .2rem 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.chart { display: block; max-width: 100%; height: auto; }
.chart .bar { fill: var(--accent); }
.chart .axis { stroke: var(--line); }
.chart text { fill: var(--muted); font-size: 11px; }
form.filters { display: flex; flex-wrap: wrap; gap: .8rem; align-items: end; margin-bottom: 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; color: var(--muted); }
input, select, button { font: inherit; padding: .3rem .5rem; }
input[type="search"] { min-width: 16rem; }
button { cursor: pointer; }
button.danger { border: 1px solid var(--warn); color: var(--warn); background: transparent; border-radius: 4px; }
ol.hits { list-style: none; padding: 0; margin: 0; }
ol.hits li { border-bottom: 1px solid var(--line); padding: .5rem 0; display: flex; gap: .6rem; }
ol.hits .meta { font-size: .85rem; color: var(--muted); }
/* Stored text is isolated from what surrounds it: a bidi control in it reorders nothing outside it. */
a, code, h1, .snippet, .text, pre, td, th { unicode-bidi: isolate; }
mark { background: var(--mark); color: inherit; }
.placeholder { border: 1px dashed var(--warn); color: var(--warn); border-radius: 3px; padding: 0 .2rem; font-family: ui-monospace, monospace; font-size: .9em; }
.messages { display: flex; flex-direction: column; gap: .6rem; }
.message { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .7rem; }
.message.user { background: var(--user); }
.message.assistant { background: var(--assistant); }
.message.tool { background: var(--tool); }
.message.target { outline: 3px solid var(--accent); }
.message .who { font-size: .8rem; font-weight: 700; text-transform: uppercase; letter-spacing: .04em; }
.message .who time { font-weight: 400; text-transform: none; color: var(--muted); margin-left: .5rem; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .3rem 0 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel); padding: .6rem; border-radius: 6px; font-size: .85rem; }
details summary { cursor: pointer; }
.warnings { border-left: 3px solid var(--warn); padding-left: .7rem; margin: .6rem 0; }
.actions { display: flex; gap: .6rem; align-items: center; margin: .8rem 0; flex-wrap: wrap; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;
