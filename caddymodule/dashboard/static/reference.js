// Renders the API reference with the vendored Redoc (static/redoc).
var el = document.getElementById("redoc");
if (window.Redoc && el) {
  Redoc.init(el.dataset.spec, { hideDownloadButton: false, scrollYOffset: 0 }, el);
}
