// Every share box's text follows the browser's address (web.share.share_sync_js): on each
// history change and, as a backstop, every sync_ms. Installed once per page load.
(function () {
  const w = window;
  if (w.__svShareSync) return;
  w.__svShareSync = true;
  const boxes = document.getElementsByClassName('sv-share-url');  // live: no query a tick
  const sync = () => {
    for (const el of boxes) {
      if (el.textContent !== w.location.href) el.textContent = w.location.href;
    }
  };
  for (const name of ['pushState', 'replaceState']) {
    const orig = w.history[name];
    w.history[name] = function () { const r = orig.apply(this, arguments); sync(); return r; };
  }
  w.addEventListener('popstate', sync);
  setInterval(sync, {{ sync_ms }});
  sync();
})();
