/**
 * The admin router's status page: plain HTML and one small script, no framework and nothing loaded from
 * elsewhere. It lists the limiters and their rules, shows the chosen limiter's most limited keys (read again
 * every 2 s), and looks a key up. Every text from the server is set as text, never as HTML. It only reads:
 * the API's writes are not the page's (see docs/threat-model.md).
 */

const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice: limiters</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #1d232b; background: #f7f8fa; }
  h1 { font-size: 1.3rem; margin: 0 0 1rem; }
  h2 { font-size: 1rem; margin: 1.5rem 0 .5rem; }
  table { border-collapse: collapse; background: #fff; min-width: 32rem; }
  th, td { text-align: left; padding: .35rem .75rem; border-bottom: 1px solid #e2e5ea; }
  td.n { text-align: right; font-variant-numeric: tabular-nums; }
  code, pre { font-family: ui-monospace, monospace; }
  pre { background: #fff; padding: .75rem; border: 1px solid #e2e5ea; max-width: 48rem; overflow: auto; }
  #status { color: #6b7380; }
</style>
</head>
<body>
<h1>sluice limiters</h1>
<label>Limiter <select id="limiter"></select></label> <span id="status"></span>
<div id="rules"></div>
<h2>Most limited keys (last 5 minutes, every node)</h2>
<table id="top"><thead><tr><th>Key</th><th>Denied</th><th>Near limit</th><th>Error</th></tr></thead><tbody></tbody></table>
<h2>Look up a key</h2>
<form id="lookup"><input id="key" name="key" size="40" placeholder="key, e.g. ip:203.0.113.7" required> <button>Look up</button></form>
<pre id="found" hidden></pre>
<script>SCRIPT</script>
</body>
</html>
`;

// Inline, so the page works wherever it is read: '/admin/limits' and '/admin/limits/' alike (a framework
// that strips its mount path cannot tell the router which one the browser asked for). The API's paths are
// found from the page's own address, never from anything the server was told.
const PAGE_SCRIPT = `'use strict';
const base = location.pathname.replace(/\\/index\\.html$/, '/').replace(/\\/?$/, '/');
const select = document.getElementById('limiter');
const status = document.getElementById('status');
const rows = document.querySelector('#top tbody');
const rules = document.getElementById('rules');
const found = document.getElementById('found');

async function api(path) {
  const response = await fetch(base + path, { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(path + ': ' + response.status);
  return response.json();
}

function cell(text, numeric) {
  const td = document.createElement('td');
  td.textContent = String(text);
  if (numeric) td.className = 'n';
  return td;
}

let limiters = [];

function showRules() {
  const limiter = limiters.find((l) => l.name === select.value);
  rules.textContent = limiter ? 'Rules: ' + limiter.rules.map((r) => r.name + ' (' + r.kind + ', limit ' + r.limit + ')').join(', ') : '';
}

async function refresh() {
  if (!select.value) return;
  try {
    const top = await api('api/limiters/' + select.value.replaceAll('/', '%2F') + '/top?n=10');
    rows.replaceChildren(
      ...top.keys.map((row) => {
        const tr = document.createElement('tr');
        tr.append(cell(row.key), cell(row.denied, true), cell(row.nearLimit, true), cell(row.error, true));
        return tr;
      }),
    );
    status.textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (error) {
    status.textContent = String(error.message);
  }
}

document.getElementById('lookup').addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = document.getElementById('key').value;
  try {
    const answer = await api('api/limiters/' + select.value.replaceAll('/', '%2F') + '/keys/' + encodeURIComponent(key));
    found.textContent = JSON.stringify(answer.decision, null, 2);
  } catch (error) {
    found.textContent = String(error.message);
  }
  found.hidden = false;
});

select.addEventListener('change', () => {
  showRules();
  void refresh();
});

(async () => {
  try {
    limiters = (await api('api/limiters')).limiters;
  } catch (error) {
    status.textContent = String(error.message);
    return;
  }
  select.replaceChildren(
    ...limiters.map((l) => {
      const option = document.createElement('option');
      option.value = l.name;
      option.textContent = l.name;
      return option;
    }),
  );
  showRules();
  await refresh();
  setInterval(refresh, 2000);
})();
`;

let page: Promise<{ html: string; csp: string }> | undefined;

/**
 * The page as a response. Its Content-Security-Policy runs its one inline script (by its SHA-256) and
 * nothing else: nothing loads from elsewhere, nothing frames it, it connects only to its own origin.
 */
export async function statusPage(): Promise<Response> {
  page ??= (async () => {
    const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(PAGE_SCRIPT));
    const hash = btoa(String.fromCharCode(...new Uint8Array(digest)));
    return {
      html: PAGE_HTML.replace('SCRIPT', () => PAGE_SCRIPT),
      csp: `default-src 'none'; script-src 'sha256-${hash}'; connect-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`,
    };
  })();
  const { html, csp } = await page;
  return new Response(html, {
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': csp,
      'x-content-type-options': 'nosniff',
    },
  });
}
