(function () {
  // The corner link keeps every other parameter of the page: it drops present only.
  for (const a of document.querySelectorAll('a.' + {{ marker }} + '-exit')) {
    const url = new URL(window.location.href);
    url.searchParams.delete('present');
    a.href = url.pathname + url.search + url.hash;
  }
})();
