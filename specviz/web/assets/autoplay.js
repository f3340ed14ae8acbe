// The autoplay clock (web.stagekeys.autoplay_js): while the marker says on, press the
// stage's hidden tick button once per period, only when the app is idle and only once per
// frame shown. Installed once per page load.
(function () {
  const w = window;
  if (w.__svPlay) return;
  const P = w.__svPlay = {seen: null, since: 0, pressed: null, at: 0};
  const marks = document.getElementsByClassName({{ marker }});  // live: no query a tick
  const idle = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-stale="true"]');
  };
  setInterval(function () {
    const m = marks[0];
    if (!m || m.dataset.on !== '1') { P.seen = null; P.pressed = null; return; }
    if (!idle()) return;
    const now = Date.now();
    const shown = m.dataset.stage + ':' + m.dataset.shown;
    if (shown !== P.seen) { P.seen = shown; P.since = now; }
    const period = 1000 * parseFloat(m.dataset.speed);
    if (P.pressed === shown && now - P.at < {{ wait_ms }} + period) return;
    const due = P.pressed === null ? P.since + period
      : Math.max(P.at + period, P.since + {{ hold }} * period);
    if (now < due) return;
    const b = document.querySelector('.st-key-' + m.dataset.stage + '_tick button');
    if (!b || b.disabled) return;
    P.pressed = shown; P.at = now;
    b.click();
  }, {{ poll_ms }});
})();
