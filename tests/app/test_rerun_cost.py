"""What a warm rerun of a page must not do again (issue 25: warm reruns <= 40 ms): structural checks, not timings."""

import pathlib

import pytest
from streamlit.runtime.caching import cache_data_api, cache_resource_api

PAGES = ["views/saturation.py", "views/multihead.py", "views/flash_walkthrough.py", "views/learning_scale.py"]


@pytest.mark.parametrize("path", PAGES)
def test_a_warm_rerun_makes_no_streamlit_cached_function_of_the_page(open_page, monkeypatch, path):
    """An @st.cache_data / @st.cache_resource written in a page runs with the page: every rerun made the cached
    function again and read its source (~0.4 ms each, learning_scale had two) before hashing its arguments."""
    made = []
    for api in (cache_data_api, cache_resource_api):
        real = api.make_cached_func_wrapper
        counted = lambda info, real=real: made.append(info.func) or real(info)  # noqa: E731
        monkeypatch.setattr(api, "make_cached_func_wrapper", counted)
    at = open_page(path)
    at.run()
    assert not at.exception
    page = pathlib.Path(path).name
    assert [f.__qualname__ for f in made if pathlib.Path(f.__code__.co_filename).name == page] == []
