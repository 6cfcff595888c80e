// MathJax 2 (shipped by the jupyter-server-mathjax package, copied into the site at build time):
// the STIX-Web fonts it carries, no menu, no loading messages.
// Arithmatex (generic mode) leaves \( \) and \[ \] inside elements of class "arithmatex".
window.MathJax = {
  tex2jax: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: false,
    ignoreClass: ".*",
    processClass: "arithmatex",
  },
  "HTML-CSS": { availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null },
  SVG: { font: "STIX-Web" },
  messageStyle: "none",
  showMathMenu: false,
};
