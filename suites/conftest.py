"""Suite-wide set-up: the conformance plugin records cells; this project's own tests also run under the cells'
hypothesis profile (CONFORMANCE_PROFILE) with one torch thread per process."""

from hypothesis import settings

from conformance.core.settings import configure_process, profile_name, register_hypothesis_profiles

pytest_plugins = ["conformance.plugin"]

configure_process()
register_hypothesis_profiles()
settings.load_profile(f"conformance-{profile_name()}")
