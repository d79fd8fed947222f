"""What each submission under tests/submissions must score: the checks it fails and the feedback it gets.

CASES hold under the default settings, where a failure that builds on another function's mistake keeps its
points (``[scoring] borrowed = "carry_forward"``): a single mistake loses the checks that test it, and no more.
DEDUCTED says what each submission loses besides under ``borrowed = "deduct"`` (every failure costs its points).
"""

from __future__ import annotations

from autograder.assignment.catalogue import catalogue
from autograder.scoring import GATED


def checks_of(function: str, *, gated: bool = False, values: bool = False) -> set[str]:
    """The hidden checks of ``function`` (the catalogue's): its own correctness checks, or with ``gated`` its integrity
    and timing checks that run here (timing_gpu is not run without a GPU); with ``values`` only those that compare
    values within the tolerances."""
    return {
        entry.check
        for entry in catalogue()
        if entry.function == function
        and (entry.category in GATED) == gated
        and (entry.tolerance or not values)
        and entry.check != "timing_gpu"
    }


SDPA_VALUES = checks_of("scaled_dot_product_attention", values=True)  # matches_torch, causal, fully masked, ...
SDPA_ALL = checks_of("scaled_dot_product_attention")  # ... and the lesson's shape, no mutation
SOFTMAX_ALL = checks_of("masked_softmax")
MHA = checks_of("MultiHeadAttention")
GATED_SDPA = checks_of("scaled_dot_product_attention", gated=True)  # integrity_sdpa, timing_cpu
GATED_MHA = checks_of("MultiHeadAttention", gated=True)
EVERYTHING_ABOVE_SDPA = SDPA_ALL | MHA | GATED_SDPA | GATED_MHA
# a submission that calls fused attention where the checks give no mask: those checks fail, and what is gated on them;
# the module is the reference's: right once the attention is (its run with the attention standing in shows it), and
# its integrity flag is raised where the module's calls record the fused op (FUSED_UNSEEN: where they cannot)
FUSED_BLOCKED = {"sdpa_lesson_shape", "sdpa_matches_torch"} | GATED_SDPA | GATED_MHA
FUSED_UNSEEN = {"sdpa_lesson_shape", "sdpa_matches_torch"} | GATED_SDPA
NOT_AVAILABLE = "not available in this assignment"
ONCE_SCALE_FIXED = "Correct once scale_scores is fixed: this check keeps its points"

# name -> (checks that earn nothing, {check: a phrase its feedback must contain})
CASES: dict[str, tuple[set[str], dict[str, str | tuple[str, ...]]]] = {
    "reference": (set(), {}),
    # the optional blockwise part's submissions, under the default settings (the part off): the reference's grades,
    # their blockwise_attention not graded (tests/checks/test_blockwise_mistakes.py and test_memory_measure.py grade
    # them on)
    **dict.fromkeys(
        (
            "blockwise_full_matrix",
            "edge_blockwise_query_slices",
            "attack_blockwise_numpy",
            "mistake_blockwise_block_normalised",
            "mistake_blockwise_last_block_dropped",
            "mistake_blockwise_mask_after_exp",
            "mistake_blockwise_max_from_zero",
            "mistake_blockwise_nan_rows",
            "mistake_blockwise_no_rescale_output",
            "mistake_blockwise_no_rescale_sum",
            "attack_memory_thread",
            "attack_memory_numpy_only",
            "attack_memory_int32_bits",
            "attack_memory_blocks_kept",
            "attack_memory_detected",
            "attack_memory_shape_detected",
            "attack_memory_forked",
            "attack_memory_reserved",
        ),
        (set(), {}),
    ),
    # the optional decoding part's submissions, under the default settings (the part off): the reference's grades
    # (tests/checks/test_decoding_mistakes.py grades them with the part on)
    **dict.fromkeys(
        (
            "mistake_cache_head_axis",
            "mistake_cache_no_cap",
            "mistake_decoding_cache_unused",
            "mistake_decoding_top_left",
            "mistake_gqa_tiled",
        ),
        (set(), {}),
    ),
    # its source reaches torch's internals (_C), whether or not the part is graded
    "attack_blockwise_unmeasured": (
        {"integrity_sdpa", "integrity_mha"},
        {"integrity_sdpa": "reaches into torch's internals", "integrity_mha": "reaches into torch's internals"},
    ),
    # broken or hostile from the first line: nothing can be earned
    "syntax_error": ({"*"}, {"scores_shape": "could not be loaded: SyntaxError"}),
    "import_error": (
        {"*"},
        {
            "scores_shape": "imports numpy_but_misspelled; a submission may import only Python's standard library,"
            " torch and numpy"
        },
    ),
    # what is not allowed while grading, in the student's words, with their line (and no path of the grader's)
    "run_program_at_import": (
        {"*"},
        {
            "scores_shape": 'line 6 (`subprocess.Popen([sys.executable, "-m", "pip", "--version"])`) runs a program,'
            " which is not allowed while grading"
        },
    ),
    "write_outside_at_import": (
        {"*"},
        {
            "scores_shape": 'line 3 (`with open("../attention-log.txt", "w") as handle:`)'
            " uses a file outside its own folder",
            "integrity_sdpa": "writes files (line 3: open())",
        },
    ),
    "loop_at_import": ({"*"}, {"scores_shape": "could not be loaded: Timeout"}),
    "sys_exit_at_import": ({"*"}, {"scores_shape": "could not be loaded: SystemExit"}),
    "os_exit_at_import": ({"*"}, {"scores_shape": "could not be loaded: WorkerDied"}),
    # an exception named as the grader's own "not graded": the student's error, never an unreadable file
    "not_graded_at_import": (
        {"*"},
        {"scores_shape": "attention.py could not be loaded: not graded: the student's own"},
    ),
    # hostile in one function: costs that function and what is built on it, nothing else
    "hang_in_softmax": (SOFTMAX_ALL | EVERYTHING_ABOVE_SDPA, {"softmax_values": "no answer within"}),
    # raised in scale_scores: the attention is right once it is (its calls run again with it standing in), so
    # only scale_scores' check is lost, and timing, whose calls all raise, is withheld
    "sys_exit_in_call": ({"scale_values", "timing_cpu"}, {"scale_values": "SystemExit: grading over"}),
    "os_exit_in_call": ({"output_values"} | EVERYTHING_ABOVE_SDPA, {"output_values": "worker process died"}),
    "segfault": ({"padding_lengths"}, {"padding_lengths": "worker process died"}),
    # the blow-up is causal_mask's: the attention's causal check passes with it answered by the reference
    "memory_blowup": (
        {"causal_square", "causal_rectangular", "timing_cpu"},
        {"causal_square": "MemoryError"},
    ),
    "flood_output": (set(), {}),
    "warnings_printed": (set(), {}),
    "read_stdin": ({"scale_values", "timing_cpu"}, {"scale_values": "EOFError"}),
    "background_process": (set(), {}),
    # the sandbox: the reference cannot be read (so the wrong fallback is graded), the zygote cannot be killed
    "steal_reference": (
        {"scale_values"} | GATED_MHA | {"integrity_sdpa"},
        {"scale_values": "did not divide the scores by sqrt(d_k)"},
    ),
    "kill_zygote": (set(), {}),
    # what the attack leaves in the source is flagged too, though the grade already shows it failed
    "patch_torch_compare": (
        {"scale_values"} | GATED_MHA | {"integrity_sdpa"},
        {"scale_values": "did not divide", "integrity_sdpa": "replaces torch's own functions"},
    ),
    "fake_results": (
        {"scale_values"} | GATED_MHA | {"integrity_sdpa"},
        {"scale_values": "divided by d_k", "integrity_sdpa": "writes files"},
    ),
    "tensor_subclass": ({"output_values"}, {"output_values": "tensor subclass"}),
    "wrong_signature": (
        (SDPA_ALL - {"sdpa_lesson_shape"}) | MHA | GATED_SDPA | GATED_MHA,
        {"sdpa_matches_torch": "unexpected keyword argument 'mask'"},
    ),
    "missing_function": (
        {"variance_close", "variance_uses_generator"},
        {"variance_close": "no function named dot_product_variance"},
    ),
    # forged replies (a flood of JSON, deep nesting, an absurd shape, nulls): each the student's failed check
    "wire_bomb_reply": (
        {"scale_values", "output_values", "causal_square", "causal_rectangular", "padding_lengths"}
        | EVERYTHING_ABOVE_SDPA,
        {
            "output_values": "header of",
            "scale_values": "header of",
            "causal_square": "malformed tensor",
            "padding_lengths": "not a list of names",
            "integrity_sdpa": "the grader's worker",
        },
    ),
    # what crosses from the worker, bounded and validated: each costs the attacking file its own points
    "shrink_shared_memory": (GATED_SDPA - {"timing_cpu"} | GATED_MHA, {"integrity_sdpa": ".modules"}),
    "trickle_reply": ({"output_values"} | EVERYTHING_ABOVE_SDPA, {"output_values": "no complete answer within"}),
    "forged_empty_gradients": (
        {"softmax_fully_masked", "sdpa_fully_masked", "sdpa_gradients", "integrity_sdpa"} | GATED_MHA,
        {"sdpa_gradients": "0 gradients for 3 inputs", "softmax_fully_masked": "0 gradients for 1 inputs"},
    ),
    "forged_markers": (
        {
            "scores_shape",
            "scores_values",
            "scale_values",
            "causal_square",
            "causal_rectangular",
            "variance_close",
            "variance_uses_generator",
        }
        | EVERYTHING_ABOVE_SDPA,
        {
            "scores_values": "malformed float marker",
            "causal_square": "malformed tuple marker",
            "variance_close": "too large for int64",
            "scale_values": "cannot scale",
        },
    ),
    # a tensor marker whose dtype is a list (unhashable where the reader looks a name up): the student's WireError
    "wire_unhashable_reply": (
        {"variance_close", "variance_uses_generator"} | GATED_SDPA - {"timing_cpu"} | GATED_MHA,
        {
            "variance_close": "malformed tensor header",
            "integrity_sdpa": "reaches into torch's internals or the grader's worker",
        },
    ),
    # a string that is never run is text: not parsed, so neither a grader error nor a finding (code nested too deeply
    # in a string given to exec is a finding: test_integrity.py)
    "scan_bomb": (set(), {}),
    # a (N, 1, 1) mask for the feedback picture: sized before any work (the grader's peak stays at 0.3 GB, not 4.2)
    "picture_bomb": ({"padding_lengths"}, {"padding_lengths": "entries differ"}),
    # escape sequences in an exception message: shown as text in the terminal, the CSV and the HTML page
    "terminal_escapes": ({"scale_values", "timing_cpu"}, {"scale_values": "ValueError: \x1b[2J"}),
    # the classic mistakes, each named
    # the classic mistakes, each named, each costing the checks that test it (what builds on it is carried forward)
    "mistake_no_scale": (
        {"scale_values"},
        {
            "scale_values": "did not divide the scores by sqrt(d_k)",
            "sdpa_matches_torch": ONCE_SCALE_FIXED,
            "mha_matches_torch": "Correct once scaled_dot_product_attention is fixed",
        },
    ),
    "mistake_divide_by_dk": (
        {"scale_values"},
        {
            "scale_values": "divided by d_k, not by sqrt(d_k)",
            "sdpa_matches_torch": ONCE_SCALE_FIXED,
        },
    ),
    "mistake_query_axis": (
        SOFTMAX_ALL - {"softmax_no_mutation"},
        {"softmax_values": "over the query axis", "sdpa_matches_torch": "over the query axis"},
    ),
    # two independent mistakes: the attention's own float16 overflow is not carried (it fails with the reference's
    # masked_softmax too)
    "mistake_query_axis_and_overflow": (
        SOFTMAX_ALL - {"softmax_no_mutation"} | {"sdpa_dtypes"},
        {"softmax_values": "over the query axis", "sdpa_matches_torch": "Correct once masked_softmax is fixed"},
    ),
    # the blockwise part is off here: scale_scores' own check only (with the part on, tests/test_blockwise_mistakes.py)
    "mistake_blockwise_reuses_wrong_scale": (
        {"scale_values"},
        {"sdpa_matches_torch": "Correct once scale_scores is fixed"},
    ),
    "mistake_blockwise_dtype_slip": ({"scale_values"}, {"sdpa_dtypes": "fix scale_scores first"}),
    "mistake_mask_inverted": (
        {"softmax_masked", "softmax_fully_masked", "softmax_stability"},
        {"softmax_masked": "polarity is inverted", "sdpa_matches_torch": "Correct once masked_softmax is fixed"},
    ),
    "mistake_zero_fill": ({"softmax_masked", "softmax_fully_masked"}, {"softmax_masked": "set to 0 instead of -inf"}),
    "mistake_mask_after_softmax": (
        {"softmax_masked", "softmax_fully_masked"},
        {"softmax_masked": "applied after the softmax"},
    ),
    # NaN in the output and in the gradients, both reproduced through the student's own masked_softmax
    "mistake_nan_rows": (
        {"softmax_fully_masked"},
        {
            "softmax_fully_masked": "come out as NaN",
            "sdpa_fully_masked": "Correct once masked_softmax is fixed",
        },
    ),
    # -1e6 does not even fit in float16: masked_fill raises there, and the attention is right once it does not
    "mistake_uniform_rows": (
        {"softmax_fully_masked"},
        {"softmax_fully_masked": "uniform weights", "sdpa_fully_masked": "uniform weights"},
    ),
    "mistake_causal_flipped": (
        {"causal_square", "causal_rectangular"},
        {
            "causal_square": "triangle is flipped",
            "sdpa_causal": "Correct once causal_mask is fixed",
        },
    ),
    # is_causal ignored: named; the module's causal case builds on it, carried forward
    # its own mistake, an edge of the attention: integrity stays, timing (wrong causal answers) is withheld
    "mistake_causal_ignored": ({"sdpa_causal", "timing_cpu"}, {"sdpa_causal": "is_causal=True was ignored"}),
    "mistake_causal_bottom_right": (
        {"causal_rectangular"},
        {"causal_rectangular": "aligned bottom-right", "sdpa_causal": "aligned bottom-right"},
    ),
    # attention_scores raises on a head axis: the attention and the module pass once it is answered by the reference
    # (each check run again so), and timing is measured on the same work as (B * H, T, d)
    # only the 2-D branch breaks: no named transpose, and the attention's 2-D case builds on it
    "edge_scores_2d_breaks": (
        {"scores_shape"},
        {
            "scores_shape": "it worked on (B, T, d_k)",
            "sdpa_matches_torch": "passes this check once attention_scores gives the reference's results",
        },
    ),
    # an attention that only hands over to a helper that always raises: nothing carried (the module, the reference's,
    # is right once the attention is: its run with the attention standing in shows it)
    "attack_carry_stub": (
        {"scores_shape", "scores_values"} | SDPA_ALL | GATED_SDPA,
        {"sdpa_matches_torch": "RuntimeError: not yet", "integrity_sdpa": "Not awarded yet"},
    ),
    "mistake_variance_scaled": ({"variance_close"}, {"variance_close": "about 1 is the variance after scaling"}),
    "mistake_transpose_12": (
        {"scores_shape"},
        {
            "scores_shape": "transposed axes 1 and 2",
            "sdpa_matches_torch": "passes this check once attention_scores gives the reference's results",
        },
    ),
    "mistake_no_max_subtraction": ({"softmax_stability"}, {"softmax_stability": "subtract each row's maximum"}),
    # the shapes of trouble on every draw: each passes on every seed, or on some, where the draw decides
    "mistake_one_key_is_one": (
        {"softmax_fully_masked"},
        {
            "softmax_fully_masked": "with fully masked rows and a single key (T_k = 1)",
            "sdpa_fully_masked": "Correct once masked_softmax is fixed",
        },
    ),
    "mistake_single_key_rows_zeroed": (
        {"softmax_masked", "softmax_fully_masked"},
        {"softmax_masked": "expected 1, got 0", "sdpa_causal": "Correct once masked_softmax is fixed"},
    ),
    "mistake_mask_skipped_for_one_query": (
        {"sdpa_matches_torch"},
        {"sdpa_matches_torch": "with a single query (T_q = 1) and a (B, 1, 1, T_k) padding mask"},
    ),
    "mistake_mha_mask_query_length": ({"mha_masks"}, {"mha_masks": "with a (B, 1, T_k) padding mask"}),
    "mistake_padding_at_least_one_key": ({"padding_lengths"}, {"padding_lengths": "expected False, got True"}),
    # a C port's running maximum from -10000 (float32): a row entirely below -10088 comes out as zeros; every draw
    # has such a row (it would pass on 42 seeds of 50 if the draw decided)
    "mistake_running_max_floor": ({"softmax_stability"}, {"softmax_stability": "on scores of size 1e4 in float"}),
    # in place on a tensor that requires grad is an error of its own in the gradient check
    "mistake_mutation": ({"softmax_no_mutation", "softmax_fully_masked"}, {"softmax_no_mutation": "in place"}),
    # torch.equal patched on top: flagged, and the integrity points with it
    "mistake_mutation_hidden": (
        {"softmax_no_mutation", "softmax_fully_masked", "integrity_sdpa", "integrity_mha"},
        {
            "softmax_no_mutation": "in place",
            "integrity_sdpa": "replaces torch's own functions",
            "integrity_mha": "torch.equal",
        },
    ),
    "mistake_loop_over_queries": ({"timing_cpu"}, {"timing_cpu": "Python loop"}),
    # every loop lands far above the budget on a shape made for it (docs/performance.md)
    "mistake_loop_over_batches": ({"timing_cpu"}, {"timing_cpu": "Python loop"}),
    "mistake_loop_over_heads": ({"timing_cpu"}, {"timing_cpu": "Python loop"}),
    "mistake_loop_output_product": ({"timing_cpu"}, {"timing_cpu": "Python loop"}),
    # fused attention is unreachable in the worker (it raises), and the record and the scan flag the attempt
    "cheat_fused": (FUSED_BLOCKED, {"integrity_sdpa": "fused attention", "sdpa_matches_torch": NOT_AVAILABLE}),
    "cheat_fused_getattr": (
        FUSED_BLOCKED,
        {"integrity_sdpa": "builds names at run time", "sdpa_matches_torch": NOT_AVAILABLE},
    ),
    # on a raw _thread thread, found as vars(F)[a built name]: neither the record nor the scan sees it
    "cheat_fused_raw_thread": (
        FUSED_UNSEEN,
        {"sdpa_matches_torch": NOT_AVAILABLE, "integrity_sdpa": "Not awarded yet"},
    ),
    # attacks on the fused-attention block (full marks each without it, integrity passed): the block undone through
    # weakref.finalize's registry, and torch.vmap over the fused function, each on a raw _thread thread; torch's own
    # multi-head attention source run by code.InteractiveInterpreter().runsource at import
    "fused_undo_block": (FUSED_UNSEEN, {"sdpa_matches_torch": NOT_AVAILABLE, "integrity_sdpa": "Not awarded yet"}),
    "fused_vmap": (FUSED_UNSEEN, {"sdpa_matches_torch": NOT_AVAILABLE, "integrity_sdpa": "Not awarded yet"}),
    "fused_interpreter_mha": (
        {"*"},
        {
            "scores_shape": "could not be loaded: NotAvailable: building code at run time",
            "integrity_sdpa": "builds code at run time or reaches native memory (line ",
            "integrity_mha": ": import of code, line ",
        },
    ),
    # torch's own attention written in Python (torch.onnx.ops' eager Attention-23): its import loads (the dataclasses
    # it builds are the standard library's own shapes), and the call is refused as a fused kernel is (the op record
    # finds torch's attention among the callers); with the texts its import compiles carried as string constants too
    # an f-string as an annotation, compiled by typing: any expression (a red team's): refused, the file does not load
    "attack_annotation_fstring": (
        {"*"},
        {"scores_shape": "could not be loaded: NotAvailable: building code at run time"},
    ),
    # the same attention on a raw _thread thread, beyond the op record's mode (a red team's): its code is refused
    "attack_python_attention_raw_thread": (
        {
            "sdpa_lesson_shape",
            "sdpa_matches_torch",
            "sdpa_causal",
            "sdpa_fully_masked",
            "sdpa_dtypes",
            "sdpa_gradients",
            "sdpa_no_mutation",
        }
        | GATED_SDPA
        | GATED_MHA,  # fmt: skip
        {"sdpa_matches_torch": NOT_AVAILABLE, "integrity_sdpa": "import of torch.onnx.ops"},
    ),
    "fused_onnx_attention": (
        FUSED_BLOCKED,
        {
            "sdpa_matches_torch": NOT_AVAILABLE,
            "integrity_sdpa": "its attention written in Python (line ",
            # the module's op record shows the call where its substituted run (the attention answered after a round
            # that ran the student's own) reached it first; the source scan where nothing ran it
            "integrity_mha": ("import of torch.onnx.ops", "ran PyTorch's fused attention or its attention written in"),
        },
    ),
    "fused_onnx_smuggled": (
        FUSED_BLOCKED,
        {
            "sdpa_matches_torch": NOT_AVAILABLE,
            "integrity_sdpa": "its attention written in Python (line ",
            "integrity_mha": "import of torch.onnx.ops",
        },
    ),
    # a loop in one branch only: every call form is timed (it passed when only masked calls were)
    "mistake_loop_only_without_mask": (
        {"timing_cpu"},
        {"timing_cpu": "called without a mask. Likely cause: a Python loop"},
    ),
    "mistake_loop_only_when_causal": (
        {"timing_cpu"},
        {"timing_cpu": "called with is_causal=True. Likely cause: a Python loop"},
    ),
    # memoising by identity: every timed call has fresh inputs, and stale answers are caught
    # (a stale answer is caught, or the loop itself is timed: both hints are true of it)
    "cheat_memoised_loop": ({"timing_cpu"}, {"timing_cpu": ("in a timed call", "Likely cause: a Python loop")}),
    # the worker's own request handler replaced so that timed requests return at once: the answers are checked
    "cheat_patch_handler": (
        {"timing_cpu", "integrity_sdpa", "integrity_mha"},
        # since the import list ([imports] allowed), its `import wire` in the timed call is refused before it patches
        {
            "timing_cpu": ("wrong answer in a timed call", "No module named 'wire' (not allowed)"),
            "integrity_sdpa": "the grader's worker",
        },
    ),
    # a cache keyed by the inputs' contents: every timed call has fresh inputs, so the loop pays every time
    "cheat_content_cache": ({"timing_cpu"}, {"timing_cpu": "Python loop"}),
    # twelve times the work, done by two helper processes while the student's own process waits: the timing
    # clock is the submission's cgroup, which counts them (the student's process clock alone gives full marks)
    "cheat_work_in_helpers": ({"timing_cpu"}, {"timing_cpu": "times the reference's CPU time"}),
    # in place, with the handler patched to hand back copies taken before the call: judged from our memory
    "cheat_mutation_after_copies": (
        {"softmax_no_mutation", "softmax_fully_masked", "integrity_sdpa", "integrity_mha"},
        {"softmax_no_mutation": "in place", "integrity_sdpa": "the grader's worker"},
    ),
    # fused attention in a thread of its own: the op record covers every thread the submission starts
    "cheat_fused_in_thread": (
        FUSED_BLOCKED,
        {"integrity_sdpa": "fused attention", "integrity_mha": "ran PyTorch's fused attention"},
    ),
    # the op record switched off (torch._C), the fused function reached by a built name: the static scan flags it
    "cheat_fused_record_off": (
        FUSED_BLOCKED,
        {"integrity_sdpa": "reaches into torch's internals", "sdpa_matches_torch": NOT_AVAILABLE},
    ),
    "cheat_hardcoded_variance": (
        {"variance_uses_generator"},
        {"variance_uses_generator": "same value for every generator"},
    ),
    # correct solutions written differently: full marks
    "correct_einsum": (set(), {}),
    "correct_stable_softmax": (set(), {}),
    "correct_finfo_fill": (set(), {}),
    "correct_scale_q_first": (set(), {}),
    "correct_float64_inside": (set(), {}),
    # float32-level rounding of correct math costs nothing, even in float64
    "correct_float32_sqrt": (set(), {}),
    # correct math in too low a precision: named as precision loss, with where the output first differs
    # (the stability check's near ties at 1e4 show float16 rounding on every draw: lost too; an error that large
    # is not float16 rounding by size, so that check names no cause, only where it differs)
    # (the attention's checks are carried forward to masked_softmax, and the module's to the attention: run again
    # with the reference's attention, the module passes)
    "precision_float16_inside": (
        SOFTMAX_ALL - {"softmax_no_mutation"},
        {
            "softmax_values": "precision loss: errors of this size",
            "sdpa_matches_torch": "first at index (",
            "softmax_stability": "first at index (",
        },
    ),
    # edge shapes: each mistake shows on one edge shape only
    "edge_causal_skipped_for_one_query": ({"sdpa_causal"}, {"sdpa_causal": "is_causal=True, T_q=1"}),
    # caught by masked_softmax's own check (its single-key case): the attention's causal case is carried
    "edge_uniform_row_means_masked": (
        {"softmax_fully_masked"},
        {
            "softmax_fully_masked": "a single key (T_k = 1)",
            "sdpa_causal": "Correct once masked_softmax is fixed",
        },
    ),
    "edge_dk_from_squeeze": ({"sdpa_matches_torch"}, {"sdpa_matches_torch": "the output with d_k = 1"}),
    "edge_squeeze_batch": (
        {"sdpa_matches_torch"},
        {"sdpa_matches_torch": "the output with a batch of one"},
    ),
    "edge_einsum_needs_batch": ({"sdpa_matches_torch"}, {"sdpa_matches_torch": "einsum()"}),
    # a cause is claimed only with evidence from this submission (see ABSENT for the claims that must not appear)
    "misattr_builds_on_wrong_function": (
        {"causal_square", "causal_rectangular"} | SOFTMAX_ALL - {"softmax_no_mutation"},
        {
            "sdpa_matches_torch": "your scaled_dot_product_attention passes this check once",
            "sdpa_causal": "it builds on causal_mask",
            "mha_matches_torch": "it builds on scaled_dot_product_attention",
        },
    ),
    # timing keeps its points: run again with causal_mask answered by the reference, its timed answers are right
    "misattr_causal_blamed_without_mask": (
        {"causal_rectangular", "sdpa_matches_torch"},
        {"sdpa_causal": "aligned bottom-right", "sdpa_matches_torch": "the output with d_k = 1"},
    ),
    "misattr_softmax_not_called": (
        SOFTMAX_ALL - {"softmax_no_mutation"} | SDPA_VALUES | GATED_SDPA,
        {"softmax_values": "over the query axis", "sdpa_matches_torch": "the output without a mask"},
    ),
    "misattr_bmm_blamed_on_fill": (
        {"softmax_fully_masked", "sdpa_causal", "sdpa_gradients", "sdpa_matches_torch"} | GATED_SDPA,
        {"sdpa_matches_torch": "batch1 must be a 3D tensor", "sdpa_fully_masked": "uniform weights"},
    ),
    "misattr_mha_bias_blamed_on_sdpa": (
        {"sdpa_matches_torch", "mha_matches_torch"} | GATED_MHA,
        {"mha_matches_torch": "with bias=False"},
    ),
    "misattr_fill_float16": (
        {"softmax_fully_masked"},
        {"sdpa_dtypes": "c10::Half without overflow", "sdpa_fully_masked": "uniform weights"},
    ),
    # a (B, 1, T_k) padding mask handed to the heads as it is; only the 3-D mask case of mha_masks catches it
    "mistake_mha_mask_3d": ({"mha_masks"}, {"mha_masks": "give it the head axis"}),
    # real code's idioms: precision inside float64 work that is correct math, full marks...
    "correct_float32_softmax_inside": (set(), {}),
    "correct_float32_logsumexp": (set(), {}),
    "correct_true_means_drop": (set(), {}),
    # real vectorised ports whose calls do constant work (nanoGPT's 1024 x 1024 causal buffer, the docs' additive
    # bias, diffusers' baddbmm into a fresh tensor): timing_cpu decides by how the cost grows, so they keep it
    "correct_nanogpt": (set(), {}),
    "correct_torch_docs_sdpa": (set(), {}),
    "correct_diffusers_baddbmm": (set(), {}),
    # ... additive masks, named by what they do to a fully masked row ...
    "mistake_additive_mask_1e4": (
        {"softmax_fully_masked"},
        {
            "softmax_fully_masked": "softmax of their unmasked scores",
            "sdpa_fully_masked": "softmax of their unmasked scores",
        },
    ),
    "mistake_additive_mask_1e9": (
        {"softmax_fully_masked"},
        {
            "softmax_fully_masked": "softmax of their unmasked scores",
            "sdpa_fully_masked": "softmax of their unmasked scores",
        },
    ),
    "mistake_additive_finfo_min": (
        {"softmax_fully_masked"},
        {"softmax_fully_masked": "uniform weights", "sdpa_fully_masked": "uniform weights"},
    ),
    # ... flash-attention's bottom-right causal mask, written with indices and a True-means-drop mask ...
    "mistake_causal_bottom_right_flash": (
        {"causal_rectangular"},
        {"causal_rectangular": "aligned bottom-right", "sdpa_causal": "aligned bottom-right"},
    ),
    # ... and the multi-head classics, each named
    "mistake_mha_split_no_transpose": (
        MHA | GATED_MHA,
        {"mha_matches_torch": "split with view(B, num_heads, T, d_head)", "mha_masks": "then transpose(1, 2)"},
    ),
    "mistake_mha_merge_no_transpose": (
        MHA | GATED_MHA,
        {"mha_matches_torch": "merged without moving the head axis back", "mha_masks": "merged without moving"},
    ),
    "mistake_mha_merge_order": (
        MHA | GATED_MHA,
        {"mha_matches_torch": "merged in the wrong order", "mha_masks": "wrong order"},
    ),
    "mistake_mha_scale_d_model": (
        MHA | GATED_MHA,
        {"mha_matches_torch": "divided by sqrt(d_model)", "mha_masks": "sqrt(d_model)"},
    ),
    # xformers' reference: float32 inside and out, never calling masked_softmax (whose own rows are NaN); the module,
    # run again with the reference's attention, passes: carried
    "misattr_xformers_float32": (
        {"softmax_fully_masked"} | (SDPA_VALUES - {"sdpa_gradients"}) | GATED_SDPA,
        {"sdpa_fully_masked": "dtype float32, expected float64", "softmax_fully_masked": "come out as NaN"},
    ),
}

# name -> the checks it loses besides under `[scoring] borrowed = "deduct"`: those that fail only because a function
# they build on is wrong (they pass when run again with it answered by the reference), and the gates withheld with
# them (read off
# a graded class, then checked by hand against the rule: integrity when the central check fails, timing too when a
# timed answer is wrong)
DEDUCTED: dict[str, set[str]] = {
    "mistake_no_scale": {
        "integrity_mha",
        "integrity_sdpa",
        "mha_masks",
        "mha_matches_torch",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "mistake_divide_by_dk": {
        "integrity_mha",
        "integrity_sdpa",
        "mha_masks",
        "mha_matches_torch",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "mistake_query_axis": {
        "integrity_mha",
        "integrity_sdpa",
        "mha_masks",
        "mha_matches_torch",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "mistake_mask_inverted": {
        "integrity_sdpa",
        "mha_masks",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "mistake_zero_fill": {
        "integrity_sdpa",
        "mha_masks",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "mistake_mask_after_softmax": {
        "integrity_sdpa",
        "mha_masks",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "mistake_nan_rows": {"sdpa_fully_masked"},
    "mistake_one_key_is_one": {"sdpa_fully_masked"},
    "edge_uniform_row_means_masked": {"sdpa_causal", "sdpa_fully_masked"},
    "mistake_single_key_rows_zeroed": {
        "integrity_sdpa",
        "mha_masks",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "mistake_uniform_rows": {"sdpa_dtypes", "sdpa_fully_masked"},
    "mistake_causal_flipped": {"mha_masks", "sdpa_causal", "timing_cpu"},
    "mistake_causal_ignored": {"mha_masks"},
    "mistake_causal_bottom_right": {"sdpa_causal", "timing_cpu"},
    "mistake_causal_bottom_right_flash": {"sdpa_causal", "timing_cpu"},
    "mistake_additive_mask_1e4": {"sdpa_fully_masked"},
    "mistake_additive_mask_1e9": {"sdpa_fully_masked"},
    "mistake_additive_finfo_min": {"sdpa_fully_masked"},
    "precision_float16_inside": {
        "integrity_mha",
        "mha_masks",
        "mha_matches_torch",
        "integrity_sdpa",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "misattr_builds_on_wrong_function": {
        "integrity_mha",
        "integrity_sdpa",
        "mha_masks",
        "mha_matches_torch",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "misattr_causal_blamed_without_mask": {"sdpa_causal", "timing_cpu"},
    "misattr_bmm_blamed_on_fill": {
        "integrity_mha",
        "mha_masks",
        "mha_matches_torch",
        "sdpa_dtypes",
        "sdpa_fully_masked",
    },
    "misattr_fill_float16": {"sdpa_dtypes", "sdpa_fully_masked"},
    # a scale mistake beside the attack: the attention's checks are carried forward, the integrity flags are not
    "steal_reference": {
        "mha_masks",
        "mha_matches_torch",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "patch_torch_compare": {
        "mha_masks",
        "mha_matches_torch",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
    "fake_results": {
        "mha_masks",
        "mha_matches_torch",
        "sdpa_causal",
        "sdpa_dtypes",
        "sdpa_fully_masked",
        "sdpa_gradients",
        "sdpa_matches_torch",
        "timing_cpu",
    },
}

# name -> {check: a phrase its feedback must NOT contain}: causes claimed without evidence
ABSENT: dict[str, dict[str, str]] = {
    "mistake_uniform_rows": {"sdpa_dtypes": "uniform weights"},
    "edge_causal_skipped_for_one_query": {"sdpa_causal": "Likely cause"},
    "edge_uniform_row_means_masked": {"sdpa_causal": "polarity"},
    "misattr_builds_on_wrong_function": {"sdpa_matches_torch": "causal_mask", "sdpa_fully_masked": "causal_mask"},
    "misattr_causal_blamed_without_mask": {"sdpa_matches_torch": "Likely cause"},
    "misattr_softmax_not_called": {
        check: "masked_softmax"
        for check in ("sdpa_matches_torch", "sdpa_causal", "sdpa_fully_masked", "sdpa_dtypes", "sdpa_gradients")
    },
    "misattr_bmm_blamed_on_fill": {
        check: "uniform weights"
        for check in ("sdpa_matches_torch", "sdpa_causal", "sdpa_dtypes", "sdpa_gradients", "timing_cpu")
    },
    "misattr_mha_bias_blamed_on_sdpa": {"mha_matches_torch": "scaled_dot_product_attention"},
    "misattr_fill_float16": {"sdpa_dtypes": "uniform weights"},
    # no "float16" for float32 rounding, no "builds on X" unless the failing function was seen calling X
    "correct_float32_softmax_inside": {"softmax_stability": "precision loss", "softmax_values": "float16"},
    "correct_float32_logsumexp": {"softmax_stability": "precision loss", "softmax_values": "float16"},
    "misattr_xformers_float32": {
        check: "masked_softmax" for check in ("sdpa_matches_torch", "sdpa_causal", "sdpa_fully_masked", "sdpa_dtypes")
    },
    "mistake_additive_mask_1e4": {"sdpa_fully_masked": "it builds on", "softmax_fully_masked": "uniform weights"},
    "mistake_additive_mask_1e9": {"sdpa_fully_masked": "it builds on", "softmax_fully_masked": "uniform weights"},
    "mistake_additive_finfo_min": {"sdpa_fully_masked": "it builds on"},
    **{
        name: {"mha_matches_torch": "scaled_dot_product_attention", "mha_masks": "scaled_dot_product_attention"}
        for name in (
            "mistake_mha_split_no_transpose",
            "mistake_mha_merge_no_transpose",
            "mistake_mha_merge_order",
            "mistake_mha_scale_d_model",
        )
    },
}

# the in-process harness (tests/grading/test_grading_in_process.py, tests/one_mistake.py) judges every case but
# these: never run there, what the case does is done to the process that runs it, or is judged by the worker alone
SANDBOX_ONLY = {
    **dict.fromkeys(
        (
            "syntax_error",
            "import_error",
            "run_program_at_import",
            "write_outside_at_import",
            "loop_at_import",
            "sys_exit_at_import",
            "os_exit_at_import",
            "not_graded_at_import",
        ),
        "a whole file, not an overlay on the reference: its load is the sandbox's",
    ),
    "hang_in_softmax": "loops for ever: only the worker's call limit ends it",
    "os_exit_in_call": "ends the process that calls it",
    "segfault": "ends the process that calls it",
    "memory_blowup": "takes the memory the worker's limit refuses",
    "kill_zygote": "kills its parent process",
    "background_process": "leaves processes that only the sandbox ends",
    "cheat_work_in_helpers": "forks helper processes at import, which only the sandbox ends",
    "read_stdin": "reads the standard input, which only the worker closes",
    "flood_output": "writes megabytes to the standard output, which only the worker bounds",
    "fake_results": "writes results.json files outside its folder",
    "sys_exit_in_call": "raises SystemExit, which the worker turns into the student's error",
    "steal_reference": "reads the grader's reference, hidden only from the worker",
    "cheat_fused": "fused attention is blocked in the worker alone",
    "cheat_fused_getattr": "fused attention is blocked in the worker alone",
    "cheat_fused_in_thread": "fused attention is blocked in the worker alone",
    "cheat_fused_raw_thread": "fused attention is blocked in the worker alone",
    "cheat_fused_record_off": "fused attention is blocked in the worker alone",
    "fused_undo_block": "fused attention is blocked in the worker alone",
    "fused_vmap": "fused attention is blocked in the worker alone",
    "fused_onnx_smuggled": "fused attention is blocked in the worker alone",
    "fused_interpreter_mha": "code built at run time is refused by the worker's guard alone",
    "attack_annotation_fstring": "code built at run time is refused by the worker's guard alone",
    "fused_onnx_attention": "fused attention is blocked in the worker alone",
    "attack_python_attention_raw_thread": "fused attention is blocked in the worker alone",
    "forged_empty_gradients": "forges the worker's replies: the wire's checks judge it",
    "forged_markers": "forges the worker's replies: the wire's checks judge it",
    "wire_bomb_reply": "forges the worker's replies: the wire's checks judge it",
    "wire_unhashable_reply": "forges the worker's replies: the wire's checks judge it",
    "trickle_reply": "forges the worker's replies: the wire's checks judge it",
    "tensor_subclass": "a tensor subclass is refused where a reply crosses the wire",
    "mistake_mutation_hidden": "hides its mutation from this process; the worker's copies show it",
}
# run there, their value checks judged: their gates lose points for what integrity's scan or timing's measure finds,
# which this harness takes as passed (what it judges of them is the withholding alone)
GATES_MEASURED = {
    **dict.fromkeys(
        (
            "cheat_content_cache",
            "cheat_memoised_loop",
            "mistake_loop_only_when_causal",
            "mistake_loop_only_without_mask",
            "mistake_loop_output_product",
            "mistake_loop_over_batches",
            "mistake_loop_over_heads",
            "mistake_loop_over_queries",
            "mistake_causal_ignored",
            "misattr_causal_blamed_without_mask",
            "terminal_escapes",
        ),
        "timing's measure (a loop, a wrong or raising timed answer)",
    ),
    **dict.fromkeys(
        (
            "cheat_mutation_after_copies",
            "patch_torch_compare",
            "shrink_shared_memory",
            "attack_blockwise_unmeasured",
        ),
        "integrity's scan of the source",
    ),
    "cheat_patch_handler": "integrity's scan and timing's measure",
}
JUDGED = sorted(set(CASES) - set(SANDBOX_ONLY))
# the cases whose score the policy changes, scored again under `[scoring] borrowed = "deduct"` from their outcomes in
# that harness (the checks run alike under either policy: scoring.score is a function of the outcomes and the
# settings); the others, and one of these, are graded so in a real batch (tests/grading/test_grading.py). Not those
# whose timing check loses under "deduct" for its wrong timed answers, which the harness takes as passed (a causal
# mask's mistake leaves the attention's central check passing, so its gates are not withheld)
TIMED_ANSWERS = {"mistake_causal_bottom_right", "mistake_causal_bottom_right_flash", "mistake_causal_flipped"}
DEDUCTED_HERE = sorted(set(DEDUCTED) & set(JUDGED) - set(GATES_MEASURED) - TIMED_ANSWERS)
