"""Every check can fail: each mutant (a deliberately broken implementation) is caught by the intended check with
the intended cause, and every check has at least one mutant."""

import pytest
import torch

from conformance import registry
from conformance.checks import CHECKS
from conformance.core.types import Cell, Subject
from conformance.runner import run_cell

from .mutants import MUTANTS


@pytest.fixture(scope="module", autouse=True)
def registered_mutants():
    for mutant in MUTANTS:
        registry.register(mutant.subject)


@pytest.fixture
def without_shrinking(monkeypatch):
    """The cells run here do not shrink a failing example: shrinking keeps a failure a failure and only makes its
    example smaller (16 of the 17 s of mutant reset_order). The tests of the shown example shrink as the matrix does."""
    import hypothesis

    from conformance import runner

    def settings_without_shrink(**options):
        options["phases"] = [phase for phase in options["phases"] if phase is not hypothesis.Phase.shrink]
        return hypothesis.settings(**options)

    monkeypatch.setattr(runner, "settings", settings_without_shrink)


@pytest.mark.parametrize("mutant", MUTANTS, ids=[f"{m.subject.id}|{m.transform}" for m in MUTANTS])
def test_mutant_is_caught(mutant, without_shrinking):
    if mutant.device == "cuda" and not torch.cuda.is_available():
        pytest.skip("a CUDA mutant: runs in the GPU run (scripts/gpu-run.sh)")
    cell = Cell(mutant.subject.id, mutant.transform, mutant.check, mutant.device, mutant.dtype)
    result = run_cell(cell)
    assert result.outcome == "fail", f"{mutant.defect}: {cell.id} was {result.outcome}: {result.message[:500]}"
    if mutant.cause.endswith(":"):
        assert (result.cause or "").startswith(mutant.cause), (mutant.defect, result.cause, result.message[:500])
    else:
        assert result.cause == mutant.cause, (mutant.defect, result.cause, result.message[:500])


def test_copies_are_judged_against_the_sources_next_call():
    """A module whose buffers change with use (running statistics) passes the state_dict and copy columns when they
    carry them (the control of mutants statistics_outside_state_dict and statistics_lost_by_deepcopy), though its
    next call after use differs from a fresh module's: the comparison is with the source's next call."""
    from .mutants import RunningShift, _subject

    x = torch.randn(2, 3, 16, 16)
    used, fresh = RunningShift(), RunningShift()
    used(x)
    assert not torch.equal(used(x), fresh(x))  # a fresh module is not what the loaded copy must match
    control = _subject("running_statistics_in_state_dict", "model.image_classifier", lambda ex: RunningShift())
    registry.register(control)
    for transform in ("state_dict", "deepcopy_used", "pickle_used"):
        for check in ("preserves_forward", "preserves_grad"):
            result = run_cell(Cell(control.id, transform, check, "cpu", "float32"))
            assert result.outcome == "pass", (transform, check, result.message[:500])


def test_an_export_that_updates_the_shared_buffers_as_eager_does_leaks_nothing():
    """Running an exported module updates the source's buffers (torch.export shares them, as a BatchNorm's running
    statistics show): a buffer left at the eager forward's own value passes no_state_leak (the control of mutant
    export_path_updates_statistics), and the source's buffer did change."""
    from .mutants import RunningShiftInPlace, _subject

    bn, x = torch.nn.BatchNorm1d(3), torch.randn(4, 3)
    torch.export.export(bn, (x,)).module()(x)
    assert bn.num_batches_tracked.item() == 1  # torch's behaviour the check allows for
    control = _subject("running_statistics_in_place", "model.image_classifier", lambda ex: RunningShiftInPlace())
    registry.register(control)
    result = run_cell(Cell(control.id, "export", "no_state_leak", "cpu", "float32"))
    assert result.outcome == "pass", result.message[:500]


def test_functional_call_of_a_module_sharing_a_default_tensor_leaks_nothing():
    """The functional_call twin (the eager module holding the values passed in) gets them in memory of its own: a
    library whose default argument puts one tensor's memory under every build's parameter (the mutant
    shares_default_tensor, sinabs' default threshold) must not see the twin's values written into the module
    under test and be blamed for a leak."""
    from .mutants import SharesDefaultScale, _subject

    control = _subject("default_tensor_under_functional_call", "quant.sign_ste", lambda ex: SharesDefaultScale(),
                       fixed={"zero_value": 1.0})
    registry.register(control)
    result = run_cell(Cell(control.id, "functional_call", "no_state_leak", "cpu", "float32"))
    assert result.outcome == "pass", result.message[:500]


def test_every_check_has_a_mutant():
    covered = {m.check for m in MUTANTS}
    assert set(CHECKS) <= covered, f"checks without a mutant: {sorted(set(CHECKS) - covered)}"


def test_every_transform_has_a_mutant_or_says_why_not():
    """Each column can fail: a mutant is caught in it, or WITHOUT_MUTANT says why none is (and a transform listed
    there that gained a mutant, or no longer exists, is named)."""
    import fnmatch

    from .mutants import WITHOUT_MUTANT

    covered = {m.transform for m in MUTANTS}
    ids = set(registry.transforms())
    exempt = {t for t in ids if any(fnmatch.fnmatchcase(t, pattern) for pattern in WITHOUT_MUTANT)}
    assert ids - covered <= exempt, f"transforms without a mutant: {sorted(ids - covered - exempt)}"
    assert not exempt & covered, f"listed in WITHOUT_MUTANT but have a mutant: {sorted(exempt & covered)}"
    stale = [p for p in WITHOUT_MUTANT if not any(fnmatch.fnmatchcase(t, p) for t in ids)]
    assert not stale, f"WITHOUT_MUTANT names no transform: {stale}"


def test_every_cause_of_the_exchange_transforms_has_a_mutant():
    """Each way a NIR or ONNX column can fail (each stage's cause) is shown by a mutant caught with that cause."""
    from conformance.transforms import nir, onnx

    causes = {cause for t in (*nir.TRANSFORMS, *onnx.TRANSFORMS) for cause in t.stage_causes_of().values()}
    missing = causes - {m.cause for m in MUTANTS}
    assert not missing, f"causes of the exchange transforms without a mutant: {sorted(missing)}"


def test_every_mutant_transform_and_check_exist():
    transforms = registry.transforms()
    for m in MUTANTS:
        assert m.check in transforms[m.transform].checks, f"{m.subject.id}: {m.transform} has no check {m.check}"


def test_a_global_hook_left_behind_is_removed_before_the_next_cell(without_shrinking):
    """Cells share a worker: a hook a transform leaves installed must not change a later cell's outcome (torch 2.11's
    failed export left one that turned snntorch's compile cells into graph breaks). The leaking cell fails
    no_state_leak, its record says what was undone, and the process is back as it was."""
    hooks = torch.nn.modules.module._global_forward_hooks
    before = dict(hooks)
    leaky = run_cell(Cell("mutant.leaves_global_hook", "functional_call", "no_state_leak", "cpu", "float32"))
    assert leaky.outcome == "fail" and leaky.cause == "state-leak", leaky.message
    assert "_global_forward_hooks" in leaky.message
    assert any("_global_forward_hooks" in line for line in leaky.extra["process_state_restored"])
    assert dict(hooks) == before
    # a check that does not look at leaks still passes, and still records what the harness undid
    same_outcome = run_cell(Cell("mutant.leaves_global_hook", "functional_call", "preserves_forward", "cpu", "float32"))
    assert same_outcome.outcome == "pass", same_outcome.message
    assert same_outcome.extra["process_state_restored"]
    assert dict(hooks) == before


def test_a_failed_transform_that_leaves_state_behind_is_recorded_and_undone():
    from conformance.core import isolation

    class Raises(torch.nn.Module):
        def forward(self, x):
            torch.nn.modules.module.register_module_buffer_registration_hook(lambda m, name, buf: buf)
            torch.set_grad_enabled(False)
            raise RuntimeError("tracing failed half-way")

    registry.register(Subject(id="mutant.raises_after_leaking", spec="quant.sign_ste", build=lambda ex: Raises(),
                              fixed={"zero_value": 1.0}, library="mutants"))
    before = isolation.snapshot()
    result = run_cell(Cell("mutant.raises_after_leaking", "eager", "forward_matches_spec", "cpu", "float32"))
    assert result.outcome == "fail" and "tracing failed half-way" in result.message
    undone = result.extra["process_state_restored"]
    assert any("_global_buffer_registration_hooks" in line for line in undone) and "grad mode left off" in undone
    assert isolation.restore(before) == [] and torch.is_grad_enabled()


def test_saved_tensor_hooks_a_failed_transform_leaves_in_force_are_popped_before_the_next_cell():
    """torch 2.11's non-reentrant checkpoint leaves its saved-tensor hooks pushed when the checkpointed forward raises
    and the exception is kept: every later backward in the process then ran them (on the GPU machine, 15 cells of
    other subjects recorded the failed module's error). Here a forward leaves a pair whose pack raises."""

    def planted_pack(tensor):
        raise RuntimeError("planted: a stale saved-tensor hook ran in another cell")

    class LeavesSavedTensorHooks(torch.nn.Module):
        def forward(self, x):
            torch._C._autograd._push_saved_tensors_default_hooks(planted_pack, lambda packed: packed)
            raise NotImplementedError("the checkpointed forward raised")

    registry.register(Subject(id="mutant.leaves_saved_tensor_hooks", spec="quant.sign_ste",
                              build=lambda ex: LeavesSavedTensorHooks(), fixed={"zero_value": 1.0}, library="mutants"))
    failed = run_cell(Cell("mutant.leaves_saved_tensor_hooks", "eager", "forward_matches_spec", "cpu", "float32"))
    assert failed.outcome == "fail" and "the checkpointed forward raised" in failed.message
    assert any("saved-tensor hooks left in force" in line for line in failed.extra["process_state_restored"])
    later = run_cell(Cell("reference.quant.lsq", "eager", "grad_matches_spec", "cpu", "float32"))
    assert later.outcome == "pass", later.message
    assert torch._C._autograd._top_saved_tensors_default_hooks(True) is None


def test_compiler_settings_a_build_changes_are_put_back_before_the_next_cell():
    """torchao's quantize_ sets inductor options while it builds a layer and leaves them: a later compiling cell in
    the same worker would compile with them. Here a build flips one inductor and one dynamo option."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    defaults = (inductor_config.coordinate_descent_tuning, dynamo_config.cache_size_limit)

    def build(example):
        inductor_config.coordinate_descent_tuning = not defaults[0]
        dynamo_config.cache_size_limit = defaults[1] + 1
        from conformance.subjects.reference import SpecModule
        from qsnn_reference import quant

        return SpecModule(quant.sign_ste, example.params, example.hyper)

    registry.register(Subject(id="mutant.sets_compiler_options", spec="quant.sign_ste", build=build,
                              fixed={"zero_value": 1.0}, library="mutants"))
    result = run_cell(Cell("mutant.sets_compiler_options", "eager", "forward_matches_spec", "cpu", "float32"))
    assert result.outcome == "pass", result.message
    assert (inductor_config.coordinate_descent_tuning, dynamo_config.cache_size_limit) == defaults


class _KeepsLastMembrane(torch.nn.Module):
    """A stateful neuron as snntorch and sinabs write them: forward stores its state in a registered buffer."""

    def __init__(self, example):
        super().__init__()
        from conformance.subjects.reference import SpecModule
        from qsnn_reference import neurons

        self.neuron = SpecModule(neurons.leaky, example.params, example.hyper)
        self.register_buffer("last", torch.zeros(()))

    def forward(self, x):
        out = self.neuron(x)
        self.last = out.detach().sum() + self.neuron.beta.detach().sum()  # depends on the parameters it ran with
        return out


class _StoresThenRaises(torch.nn.Module):
    """Keeps its input as hidden state, then raises under vmap (a data-dependent branch): the failed vmap leaves a
    batched tensor in the module, which a user who catches the error goes on using."""

    def forward(self, x):
        self.last_input = x
        if x.sum() > float("inf"):  # a Python bool on tensor data: vmap refuses it
            return x
        return torch.where(x >= 0, 1.0, -1.0).to(x.dtype)


def test_a_cell_records_what_a_failed_transform_left_in_the_module_as_a_further_finding():
    """One cell, all its findings (issue 18 section 4): vmap raising is the first finding of no_state_leak, and the
    batched tensor it left in the module is recorded too (``also``), in the record and in the report's message; the
    checks that cannot look at the module record only the failure. A known failure that explains only the first
    finding does not hide the second: the cell fails."""
    from conformance.core.types import Known
    from conformance.records.io import make_record
    from conformance.report.data import ALSO_FOUND, normalise

    subject = Subject(id="mutant.stores_then_raises", spec="quant.sign_ste", build=lambda ex: _StoresThenRaises(),
                      fixed={"zero_value": 1.0}, library="mutants")
    registry.register(subject)
    cell = Cell(subject.id, "vmap", "no_state_leak", "cpu", "float32")
    result = run_cell(cell)
    assert result.outcome == "fail" and result.cause == "data-dependent-item", (result.cause, result.message[:300])
    assert [found["cause"] for found in result.also] == ["state-leak"], result.also
    assert "last_input: functorch-wrapped" in result.also[0]["message"]
    record = make_record(run="t", cell=cell, subject=subject, result=result, reproduce="", env={})
    assert record["also"][0]["cause"] == "state-leak"
    assert ALSO_FOUND + "[state-leak]" in normalise(record)["message"]
    assert run_cell(Cell(subject.id, "vmap", "preserves_forward", "cpu", "float32")).also == []

    known_first_only = Known(transform="vmap", cause="data-dependent-item", reason="vmap refuses the bool",
                             reproducer="reproducers/README.md")
    registry.register(Subject(id="mutant.stores_then_raises_known", spec="quant.sign_ste",
                              build=lambda ex: _StoresThenRaises(), fixed={"zero_value": 1.0}, library="mutants",
                              known=(known_first_only,)))
    hidden = run_cell(Cell("mutant.stores_then_raises_known", "vmap", "no_state_leak", "cpu", "float32"))
    assert hidden.outcome == "fail" and "also found state-leak" in hidden.message, hidden.message[:300]
    forward_only = run_cell(Cell("mutant.stores_then_raises_known", "vmap", "preserves_forward", "cpu", "float32"))
    assert forward_only.outcome == "xfail", forward_only.message[:300]


def test_functional_call_lets_a_forward_update_its_own_buffers_as_eager_does():
    """torch.func.functional_call documents that buffers it is not given stay the module's: a forward that updates
    them does so as an eager forward would, which is no leak (snntorch's and sinabs' neurons were blamed for it);
    the mutant marks_swapped_parameters, whose buffer changes only under functional_call, still fails."""
    from suites.mutants import _LEAKY

    registry.register(Subject(id="mutant.keeps_last_membrane", spec="neuron.leaky", build=_KeepsLastMembrane,
                              fixed=dict(_LEAKY), param_map={"beta": "neuron.beta", "threshold": "neuron.threshold"},
                              library="mutants"))
    result = run_cell(Cell("mutant.keeps_last_membrane", "functional_call", "no_state_leak", "cpu", "float32"))
    assert result.outcome == "pass", result.message


def test_opacus_is_told_the_batch_axis_its_parameter_layers_see():
    """Opacus' batch_first describes the inputs of the layers holding parameters: a recurrent neuron stepped over a
    time-major sequence feeds its nn.Linear (B, N) per step (batch first), while a layer applied to the whole
    sequence sees (T, B, N). The harness drove snntorch's RLeaky with the sequence's layout and blamed snntorch."""
    from conformance.transforms.functional import _batch_first

    class Stepped(torch.nn.Module):
        def __init__(self, n=3):
            super().__init__()
            self.recurrent = torch.nn.Linear(n, n)

        def forward(self, x):  # (T, B, N), one step at a time
            return torch.stack([self.recurrent(step) for step in x])

    whole = torch.nn.Linear(3, 3)  # applied to (T, B, N) at once: batch on dim 1
    x = torch.randn(5, 2, 3)
    assert _batch_first(Stepped(), x, bd=1, time_dim=0) is True
    assert _batch_first(Stepped(2), torch.randn(3, 2, 2), bd=1, time_dim=0) is True  # B == N: a step all the same
    assert _batch_first(whole, x, bd=1, time_dim=0) is False
    assert _batch_first(whole, torch.randn(2, 2, 3), bd=1, time_dim=0) is False  # T == B: the whole input
    assert _batch_first(torch.nn.ReLU(), x, bd=0) is True  # no parameters: the input's layout


@pytest.mark.parametrize("transform, check", [("eager", "calls_compose"), ("eager", "returns_no_state"),
                                              ("eager", "deterministic"), ("eager", "forward_matches_spec"),
                                              ("deepcopy", "preserves_forward"), ("pickle", "preserves_forward"),
                                              ("deepcopy", "continues_mid_sequence"),
                                              ("pickle_used", "continues_mid_sequence")])
def test_a_clean_persistent_neuron_passes_what_its_mutants_fail(transform, check):
    """The control of the state mutants: the same neuron kept correctly between calls passes the checks that catch
    them, so what they fail on is their defect, not the protocol."""
    from .mutants import PERSISTENT

    registry.register(PERSISTENT)
    result = run_cell(Cell(PERSISTENT.id, transform, check, "cpu", "float32"))
    assert result.outcome == "pass", result.message


def test_a_copy_that_drops_the_held_state_passes_every_copy_column_judged_after_a_reset():
    """Mutant drops_held_state_when_copied was green before continues_mid_sequence: the copy columns compare a copy
    on the next sequence after reset(), which starts from rest whatever the copy held."""
    mutant = next(m.subject for m in MUTANTS if m.subject.id == "mutant.drops_held_state_when_copied")
    registry.register(mutant)
    for transform in ("deepcopy", "deepcopy_used", "pickle", "pickle_used"):
        for check in ("preserves_forward", "copy_independent"):
            result = run_cell(Cell(mutant.id, transform, check, "cpu", "float32"))
            assert result.outcome == "pass", (transform, check, result.message[:500])
    result = run_cell(Cell(mutant.id, "pickle_used", "continues_mid_sequence", "cpu", "float32"))
    assert (result.outcome, result.cause) == ("fail", "copy-lost-state"), result.message[:500]


def test_a_persistent_subject_is_fed_one_step_per_call_and_reset_between_sequences():
    """The call protocol as the runner drives it: every call gets one time step, the module is reset before each
    sequence, and a batch transform keeps the one-call view."""
    import dataclasses

    from conformance.transforms.harness import Context, drive

    from .mutants import PERSISTENT

    calls, resets = [], []

    class Recorder(torch.nn.Module):
        def reset(self):
            resets.append(len(calls))

        def forward(self, x):
            calls.append(tuple(x.shape))
            return x * 2

    from conformance.core.types import Example

    spec = registry.specs()[PERSISTENT.spec]
    example = Example(torch.rand(4, 2, 3, dtype=torch.float64), {}, {"time_dim": 0})
    ctx = Context(PERSISTENT, spec, example, torch.float32, torch.device("cpu"), persistent=True)
    module = Recorder()
    y = drive(ctx, module, ctx.input(), module)
    steps = example.x.shape[0]
    assert resets == [0] and len(calls) == steps >= 3 and all(shape[0] == 1 for shape in calls)
    assert torch.equal(y, ctx.input() * 2)
    calls.clear()
    drive(dataclasses.replace(ctx, persistent=False), module, ctx.input(), module)
    assert calls == [tuple(example.x.shape)]


def _without_edges(cell: Cell, monkeypatch) -> None:
    import dataclasses

    spec = registry.specs()[registry.subjects()[cell.subject].spec]
    monkeypatch.setitem(registry.specs(), spec.id, dataclasses.replace(spec, edges=None))


@pytest.mark.parametrize("mutant, check", [("rounds_ties_up", "forward_matches_spec"),
                                           ("lsq_rounds_half_away", "forward_matches_spec"),
                                           ("sign_by_division", "forward_matches_spec")])
def test_the_edge_examples_find_what_the_draws_never_reach(mutant, check, monkeypatch):
    """The draws stay a tenth of a step from rounding ties and away from exact zero weights: without the spec's edge
    examples (every tie exactly, exact zeros) these mutants pass."""
    cell = Cell(f"mutant.{mutant}", "eager", check, "cpu", "float32")
    assert run_cell(cell).outcome == "fail"
    _without_edges(cell, monkeypatch)
    assert run_cell(cell).outcome == "pass"


@pytest.mark.parametrize("mutant, check", [("wrong_far_from_threshold", "grad_matches_spec"),
                                           ("wrong_past_first_word", "forward_matches_spec")])
def test_the_draws_reach_large_inputs_and_word_tails_without_the_edges(mutant, check, monkeypatch, without_shrinking):
    """The draws cover the whole domain too (issue 18, section 3): magnitudes to 1e4 and sizes past one 32-bit word
    with a tail. Before they were widened, only the edge examples caught these mutants (the draws stayed within
    [-3, 3] and one word)."""
    cell = Cell(f"mutant.{mutant}", "eager", check, "cpu", "float32")
    _without_edges(cell, monkeypatch)
    assert run_cell(cell).outcome == "fail"


def test_later_cells_replay_the_drawn_examples_and_a_failure_still_shrinks(monkeypatch):
    """Cells of one subject, device and dtype draw the same examples (derandomized): after one passes, the others
    replay them without asking hypothesis, and a replayed failure is found again by hypothesis and shrunk to the
    same minimal example as a cell run alone."""
    import dataclasses

    from conformance import runner

    subject = "mutant.wrong_surrogate_slope"  # forward right, gradient wrong

    def cell(check: str) -> Cell:
        return Cell(subject, "eager", check, "cpu", "float32")

    for cache in (runner._EXAMPLES, runner._OUTCOMES, runner._TRUTHS):
        cache.clear()
    alone = run_cell(cell("grad_matches_spec"))
    assert alone.outcome == "fail" and not any(key[0] == subject for key in runner._EXAMPLES)
    assert run_cell(cell("forward_matches_spec")).outcome == "pass"
    assert any(key[0] == subject for key in runner._EXAMPLES)

    spec = registry.specs()[registry.subjects()[subject].spec]

    def no_drawing(**fixed):
        raise AssertionError("hypothesis was asked to draw")

    monkeypatch.setitem(registry.specs(), spec.id, dataclasses.replace(spec, examples=no_drawing))
    assert run_cell(cell("output_dtype")).outcome == "pass"
    monkeypatch.setitem(registry.specs(), spec.id, spec)
    again = run_cell(cell("grad_matches_spec"))
    assert (again.outcome, again.cause, again.example, again.message) == \
        (alone.outcome, alone.cause, alone.example, alone.message)


def test_a_cell_shows_the_shrunk_drawn_example_and_the_edge_only_when_no_draw_fails():
    everywhere = run_cell(Cell("mutant.wrong_surrogate_slope", "eager", "grad_matches_spec", "cpu", "float32"))
    edge_only = Cell("mutant.rounds_ties_up", "eager", "forward_matches_spec", "cpu", "float32")
    ties = run_cell(edge_only)
    assert everywhere.outcome == ties.outcome == "fail"
    assert "shape=(2, 10)" not in everywhere.example, everywhere.example  # shrunk from the draws
    subject = registry.subjects()[edge_only.subject]
    edges = [e.describe() for e in registry.specs()[subject.spec].edges(**subject.fixed)]
    assert ties.example in edges, ties.example  # no draw reaches a tie: the failing edge example is shown


@pytest.mark.parametrize("transform,check", [("nir_graph", "nir_graph_matches_module"),
                                             ("nir_roundtrip", "preserves_forward")])
def test_a_correct_nir_exchange_passes(transform, check):
    """The control of the NIR mutants: a toy library whose exporter and importer follow NIR's equations passes both
    columns, so the mutants fail for their defect and not for the harness."""
    from .mutants import NIR_CONTROL

    registry.register(NIR_CONTROL)
    result = run_cell(Cell(NIR_CONTROL.id, transform, check, "cpu", "float32"))
    assert result.outcome == "pass", result.message[:500]


def test_a_used_module_is_transformed_as_it_stands():
    """The *_used columns run the transform on a module that has run once, against the eager module used the same
    way: mutant breaks_graph_once_used breaks the compiled graph only on such a module, so its fresh column passes
    and only the used one finds it; the clean persistent neuron passes both."""
    from .mutants import PERSISTENT

    registry.register(PERSISTENT)
    mutant = "mutant.breaks_graph_once_used"
    fresh = run_cell(Cell(mutant, "compile_aot_eager", "no_graph_breaks", "cpu", "float32"))
    assert fresh.outcome == "pass", fresh.message[:500]
    used = run_cell(Cell(mutant, "compile_aot_eager_used", "no_graph_breaks", "cpu", "float32"))
    assert used.outcome == "fail" and used.cause.startswith("graph-break:"), (used.cause, used.message[:500])
    for transform in ("compile_aot_eager_used", "functional_call_used", "module_contract_used"):
        for check in registry.transforms()[transform].checks:
            result = run_cell(Cell(PERSISTENT.id, transform, check, "cpu", "float32"))
            assert result.outcome in ("pass", "skip"), (transform, check, result.message[:500])


class _DoublesEveryGradient(torch.nn.Module):
    """A leaky neuron whose output is the spec's, but whose backward doubles every gradient (input and parameters)."""

    def __init__(self, example):
        super().__init__()
        from conformance.subjects.reference import SpecModule
        from qsnn_reference import neurons

        self.neuron = SpecModule(neurons.leaky, example.params, example.hyper)

    def forward(self, x):
        y = self.neuron(x)
        return y + (y - y.detach())


def test_a_gradient_check_records_every_gradient_that_differs(without_shrinking):
    """One cell, all its findings (issue 18 section 4): grad_matches_spec judges every gradient before it fails, so a
    module wrong in d/dx and in its parameters' gradients reports d/dx as the finding and the parameters' as
    ``also``, not only the first."""
    from suites.mutants import _LEAKY

    registry.register(Subject(id="mutant.doubles_every_gradient", spec="neuron.leaky", build=_DoublesEveryGradient,
                              fixed=dict(_LEAKY), param_map={"beta": "neuron.beta", "threshold": "neuron.threshold"},
                              library="mutants"))
    result = run_cell(Cell("mutant.doubles_every_gradient", "eager", "grad_matches_spec", "cpu", "float64"))
    assert result.outcome == "fail" and result.cause == "grad-mismatch", (result.cause, result.message[:300])
    assert "/dx" in result.message, result.message[:300]
    assert [found["cause"] for found in result.also] == ["grad-mismatch"] * len(result.also) and result.also
    named = " ".join(found["message"] for found in result.also)
    assert "/dbeta" in named or "/dthreshold" in named, named[:300]
