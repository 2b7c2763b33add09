//! The verification verdict: every tensor against the unsharded reference, in words and numbers.

/// A verification's verdict, its worst check and the tolerance with its reason, in the learner's
/// language (`label`: the scenario's; the GPU view shows a GPU run's the same way, with its own
/// `reason` for a tolerance that is not the engine's bound; `None`: the tolerance's own).
pub fn verdict_ui(
    ui: &mut egui::Ui,
    v: &tplab_engine::block::verify::Verification,
    label: &str,
    reason: Option<String>,
) {
    let lang = super::lang(ui);
    let ta = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
    let total = v.checks.len();
    let failed = v.failures().count();
    if v.passed() {
        ui.colored_label(
            egui::Color32::from_rgb(0x00, 0x9E, 0x73),
            ta(
                "vf-passed",
                &[("total", total.to_string()), ("label", label.to_string())],
            ),
        );
    } else {
        ui.colored_label(
            ui.visuals().error_fg_color,
            ta(
                "vf-failed-checks",
                &[("failed", failed.to_string()), ("total", total.to_string())],
            ),
        );
    }
    if let Some(w) = v.worst() {
        // Read as it is written: the worst check, its GPU and its errors.
        ui.label(ta(
            "vf-worst",
            &[
                ("name", check_words(lang, w)),
                (
                    "rank",
                    w.rank.map(|r| format!(" (GPU {r})")).unwrap_or_default(),
                ),
                ("abs", crate::i18n::sci(lang, w.max_abs_error, 3)),
                ("rel", crate::i18n::sci(lang, w.max_rel_error, 3)),
            ],
        ));
    }
    let tol = crate::i18n::sci(lang, v.tolerance.relative, 2);
    match (reason, v.tolerance.bound) {
        // The engine's bound: said in a sentence, its formula one click away.
        (None, Some(b)) => {
            ui.add(
                egui::Label::new(ta(
                    "vf-tolerance-plain",
                    &[("tol", tol), ("dtype", b.dtype.to_string())],
                ))
                .wrap(),
            );
            egui::CollapsingHeader::new(crate::i18n::t(lang, "vf-tolerance-how"))
                .id_salt("verify-tolerance-how")
                .show(ui, |ui| {
                    ui.add(egui::Label::new(tolerance_reason(lang, &v.tolerance)).wrap());
                });
        }
        (reason, _) => {
            ui.add(
                egui::Label::new(ta(
                    "vf-tolerance",
                    &[
                        ("tol", tol),
                        (
                            "reason",
                            reason.unwrap_or_else(|| tolerance_reason(lang, &v.tolerance)),
                        ),
                    ],
                ))
                .wrap(),
            );
        }
    }
}

/// A checked tensor in words, from what the check says it compares: the gradient of W1 in
/// layer 0 is "the gradient of W1 (layer 0)", `g` after the MLP "the output of g after the MLP
/// (layer 0)"; a lab's own check keeps its name.
pub fn check_words(
    lang: tplab_lessons::Lang,
    check: &tplab_engine::block::verify::Check,
) -> String {
    use crate::i18n::{t, t_args};
    use tplab_engine::block::verify::Checked;
    match check.what {
        Checked::Output => t(lang, "vf-check-output"),
        Checked::GradInput => t(lang, "vf-check-grad-input"),
        Checked::RankCount => t(lang, "vf-check-rank-count"),
        Checked::ParamGrad { layer, kind } => t_args(
            lang,
            "vf-check-grad",
            &[
                ("param", kind.symbol().to_string()),
                ("layer", layer.to_string()),
            ],
        ),
        Checked::OpResult { layer, op } => t_args(
            lang,
            "vf-check-op",
            &[
                ("op", crate::widgets::op_label(lang, op)),
                ("layer", layer.to_string()),
            ],
        ),
        Checked::Other => check.name.clone(),
    }
}

/// The tolerance's reason in the learner's language (English: the engine's sentence).
pub fn tolerance_reason(
    lang: tplab_lessons::Lang,
    tol: &tplab_engine::block::verify::Tolerance,
) -> String {
    match tol.bound {
        Some(b) => crate::i18n::t_args(
            lang,
            "vf-bound",
            &[
                ("dtype", b.dtype.to_string()),
                ("eps", crate::i18n::sci(lang, b.epsilon, 2)),
                ("k", b.k.to_string()),
                ("depth", b.depth.to_string()),
                ("kappa", crate::i18n::num(lang, b.conditioning, 2)),
            ],
        ),
        None => tol.reason.clone(),
    }
}
