"""specviz: the entry point. It lists the pages (views.site) and runs the one asked for."""

import streamlit as st

from specviz.views import site

st.navigation([st.Page(p.script, title=p.title, icon=p.icon, url_path=p.path or None,
                       default=not p.path) for p in site.PAGES]).run()
