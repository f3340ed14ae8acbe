// The arrow keys as a queue of steps (web.stagekeys.step_queue_js): each press clicks its
// button once, the next click waiting until the app's rerun from the last one has finished.
(function () {
  const w = window;
  if (w.__svSteps) { w.__svSteps.keys = {{ keys }}; return; }
  const S = w.__svSteps = {keys: {{ keys }}, queue: [], waiting: false, saw: false, at: 0};
  const BUSY = 'input, textarea, select, [contenteditable="true"], [role="slider"], ' +
    '[role="textbox"], [role="spinbutton"], [role="combobox"], [role="listbox"]';
  const button = (key) => document.querySelector('.st-key-' + key + ' button');
  const state = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app ? app.getAttribute('data-test-script-state') : null;
  };
  const busy = (st) => st === 'running' || st === 'rerunRequested';
  const marks = document.getElementsByClassName({{ marker }});  // the frame on screen
  const frame = () => (marks[0] ? marks[0].dataset.shown : null);
  w.addEventListener('keydown', function (e) {
    const key = S.keys[e.key];
    if (!key || e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
    const t = e.target;
    if (t && t.closest && t.closest(BUSY)) return;
    if (!button(key)) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (S.queue.length < {{ queue_max }}) S.queue.push(key);
    pump();  // an idle app takes the press at once
  }, true);
  function pump() {
    if (!S.waiting && !S.queue.length) return;  // idle: no look at the page
    const st = state();
    if (S.waiting) {
      if (busy(st)) S.saw = true;
      const ran = S.saw || frame() !== S.frame;
      if (!(ran && !busy(st)) && Date.now() - S.at < {{ wait_ms }}) return;
      S.waiting = false;
    }
    if (!S.queue.length || busy(st)) return;
    const key = S.queue.shift();
    const b = button(key);
    if (!b || b.disabled) { S.queue = S.queue.filter((k) => k !== key); return; }
    S.waiting = true; S.saw = false; S.at = Date.now(); S.frame = frame();
    b.click();
  }
  setInterval(pump, {{ poll_ms }});
})();
