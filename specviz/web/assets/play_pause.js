// Space flips the play toggle (web.stagekeys.play_pause_js): not in a control, not with a
// modifier, not on auto-repeat; installed once per page load.
(function () {
  const w = window;
  w.__svPlayPause = w.__svPlayPause || {};
  if (w.__svPlayPause[{{ toggle_key }}]) return;
  w.__svPlayPause[{{ toggle_key }}] = true;
  const BUSY = 'input, textarea, select, button, a[href], summary, [contenteditable=""], ' +
    '[contenteditable="true"], [role="slider"], [role="button"], [role="combobox"], ' +
    '[role="listbox"], [role="option"], [role="textbox"], [role="spinbutton"], ' +
    '[role="switch"], [role="checkbox"], [role="radio"], [role="tab"], [role="menuitem"]';
  document.addEventListener('keydown', function (e) {
    if (e.key !== ' ' && e.code !== 'Space') return;
    if (e.ctrlKey || e.metaKey || e.altKey || e.shiftKey || e.repeat || e.defaultPrevented)
      return;
    const t = e.target;
    if (t && t.closest && t.closest(BUSY)) return;
    if (t && t.isContentEditable) return;
    const box = document.querySelector({{ toggle }});
    if (!box || box.disabled) return;
    e.preventDefault();
    box.click();
  });
})();
