//! Design: the learner shards the block. For each of the QKV projection, the output projection,
//! fc1 and fc2 they choose *whole / its columns / its rows* by clicking the matrix, turn sequence
//! parallelism on or off, and either let the rules place the collectives or place them by hand.
//! Everything answers from the engine ([`tplab_engine::block::design`]): the program the rules
//! derive, drawn as the block's chain of ops with the collectives where they happen; what every
//! GPU holds after each op; the first broken rule drawn where it happens, with its fixes as
//! buttons; the numbers of the program run against the unsharded reference; and the price beside
//! Megatron's plan. The challenges (`challenge.rs`) are graded by the engine from the same
//! report; solved ones are saved before they are shown solved.
//!
//! The view keeps nothing of the plan: it reads the lab state ([`crate::lab::design`]) and the
//! engine's answers derived from it for its version, and changes it through named actions.

use crate::i18n::{num, t, t_args};
use crate::lab::design::{challenges, DesignAction, WalkRefusal, FREE_TPS};
use crate::lab::{Action, Shared, ShowMe, View};
use crate::widgets::plan::{
    missing_text, place_words, rule_text, site_words, split_words, weight_words,
};
use crate::widgets::{gpu_color, text_on};
use tplab_engine::block::design::challenge::Challenge;
use tplab_engine::block::design::{
    DesignReport, Fix, ManualKind, Move, Norm, Place, Site, Split, Step, Weight,
};
use tplab_engine::config::Config;
use tplab_lessons::Lang;

/// The Design view: everything it draws is the lab state's.
#[derive(Default)]
pub struct Design;

impl View for Design {
    fn id(&self) -> &'static str {
        "design"
    }

    fn title(&self) -> &'static str {
        "Design"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, t(lang, "design-title"));
        crate::widgets::scrolling_page(ui, "design-page", |ui| self.page_ui(ui, shared));
    }

    /// The design lab's state is the lab's (one state for every view that shows its plan).
    fn state(&self, shared: &Shared) -> Option<String> {
        serde_json::to_string(&shared.design).ok()
    }

    fn show_me(&mut self, _target: &ShowMe, _shared: &mut Shared) {
        // The shell applies a target's challenge to the lab state ([`DesignAction::SelectStage`]).
    }
}

impl Design {
    fn page_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        self.challenge_bar(ui, shared, lang);
        ui.separator();
        let derived = shared.design.derived();
        let report = match &derived.report {
            Ok(r) => std::sync::Arc::clone(r),
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
                return;
            }
        };
        let cfg = derived.config.clone();
        // In a challenge, right numbers are not yet a solved goal: until a check of this plan
        // says solved, the verdict says so instead of showing a green tick.
        let goal_open = {
            let lab = &shared.design;
            lab.challenge().is_some() && !matches!(lab.fresh_check(), Some(Ok(g)) if g.solved)
        };
        // Checked and not solved: the verdict no longer says to press "Check my plan".
        let goal_checked = shared.design.fresh_check().is_some();
        let wide = ui.available_width() > 900.0;
        let mut acts: Vec<DesignAction> = Vec::new();
        // Wide: the layer and its error on the left, the verdict, the price and the lanes on the
        // right, so that a projector shows all of it without scrolling.
        if wide {
            ui.columns_const(|[left, right]| {
                self.block_ui(left, shared, &report, &cfg, lang, &mut acts);
                // What each GPU holds goes under the layer it pictures, where a projector has
                // room above the fold (beside the verdict it started below it at 1080p).
                left.separator();
                lanes_ui(left, &report, &cfg, lang);
                self.costs_ui(right, &report, &cfg, lang, true, (goal_open, goal_checked));
                walk_ui(right, lang, shared, &derived.walk);
                right.separator();
                plan_copy_ui(right, lang, shared);
            });
        } else {
            // Narrow (a 1280×720 projector, a phone): the picture of what each GPU holds
            // right under the layer, then the verdict and the price.
            self.block_ui(ui, shared, &report, &cfg, lang, &mut acts);
            ui.separator();
            lanes_ui(ui, &report, &cfg, lang);
            ui.separator();
            self.costs_ui(ui, &report, &cfg, lang, false, (goal_open, goal_checked));
            walk_ui(ui, lang, shared, &derived.walk);
            ui.separator();
            plan_copy_ui(ui, lang, shared);
        }
        for a in acts {
            shared.act(Action::Design(a));
        }
    }

    /// The challenge picker, its goal, hint, stars and the check.
    fn challenge_bar(&mut self, ui: &mut egui::Ui, shared: &mut Shared, lang: Lang) {
        let all = challenges();
        let n = all.len();
        let presenter = shared.presenter;
        let lab = &shared.design;
        let mut acts = Vec::new();
        ui.horizontal_wrapped(|ui| {
            let current = match lab.challenge() {
                Some(c) => stage_title(lang, &c),
                None => t(lang, "design-free"),
            };
            let mut pick = lab.stage();
            // On a projector the picker, the buttons and the stars share one row.
            let width = if presenter { 280.0 } else { 460.0 };
            egui::ComboBox::from_label(t(lang, "design-challenge"))
                .selected_text(current)
                .width((ui.available_width() - 110.0).clamp(120.0, width))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut pick, 0, t(lang, "design-free"));
                    for c in all {
                        ui.selectable_value(
                            &mut pick,
                            c.stage,
                            format!("{}  {}", stage_title(lang, c), star_text(lab.stars(c.id))),
                        );
                    }
                });
            if pick != lab.stage() {
                acts.push(DesignAction::SelectStage(pick));
            }
            let count = t_args(
                lang,
                "design-solved-count",
                &[
                    ("solved", lab.solved_count().to_string()),
                    ("total", n.to_string()),
                ],
            );
            match lab.challenge() {
                Some(c) if presenter => {
                    challenge_buttons(ui, lab, &c, Some(count), &mut acts);
                }
                _ => {
                    ui.label(count);
                }
            }
        });
        let Some(c) = lab.challenge() else {
            ui.label(t(lang, "design-free-intro"));
            ui.horizontal(|ui| {
                ui.label(t(lang, "design-gpus"));
                for tp in FREE_TPS {
                    if ui
                        .selectable_label(
                            lab.free_tp() == tp,
                            t_args(lang, "design-tp", &[("n", tp.to_string())]),
                        )
                        .clicked()
                    {
                        acts.push(DesignAction::SetFreeTp(tp));
                    }
                }
            });
            for a in acts {
                shared.act(Action::Design(a));
            }
            return;
        };
        ui.label(egui::RichText::new(challenge_text(lang, &c, "goal")).strong());
        // What to do, for whoever meets the lab here first: on a projector, where the layer's
        // own instructions are one hover away (at a desk they head the layer).
        if presenter {
            // A challenge answered by placing a collective (the repair challenge, whose splits
            // are fixed): the "+" between the ops, not the matrices.
            if c.answer_places_collectives() {
                ui.label(t(lang, "design-click-plus"));
            } else {
                ui.label(t(lang, "design-click"));
            }
        }
        if lab.hinted(c.stage) {
            ui.label(
                egui::RichText::new(t_args(
                    lang,
                    "design-hint-text",
                    &[("hint", challenge_text(lang, &c, "hint"))],
                ))
                .italics(),
            );
        }
        if !presenter {
            ui.horizontal_wrapped(|ui| challenge_buttons(ui, lab, &c, None, &mut acts));
        }
        // The verdict of the last check, only while it is the verdict of the plan on screen.
        match lab.fresh_check() {
            Some(Ok(g)) if g.solved => {
                ui.colored_label(
                    crate::widgets::ok_ink(ui),
                    t_args(lang, "design-solved", &[("stars", star_text(g.stars))]),
                );
                // Each star not earned, named: "★★☆" alone left the class guessing.
                for m in &g.missed {
                    ui.weak(t(lang, missed_star_key(*m)));
                }
                ui.label(t_args(
                    lang,
                    "design-why",
                    &[("why", challenge_text(lang, &c, "why"))],
                ));
                match &shared.saved {
                    Some(Ok(who)) if !who.is_empty() => {
                        ui.weak(t_args(lang, "design-saved", &[("name", who.clone())]));
                    }
                    Some(Err(e)) => {
                        ui.colored_label(ui.visuals().warn_fg_color, e);
                    }
                    _ => {}
                }
            }
            Some(Ok(g)) => {
                ui.colored_label(ui.visuals().warn_fg_color, t(lang, "design-not-yet"));
                for m in &g.missing {
                    ui.label(format!("• {}", missing_text(lang, m)));
                }
            }
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            None => {}
        }
        for a in acts {
            shared.act(Action::Design(a));
        }
        // In class mode nobody is signed in: the name is asked for at a desk only. The box
        // keeps its own id, so it keeps the focus while the name is typed.
        if shared.learner.trim().is_empty() && !shared.presenter
            || ui.memory(|m| m.has_focus(egui::Id::NULL.with("design-name-box")))
        {
            ui.horizontal(|ui| {
                let label = ui.weak(t(lang, "design-name"));
                ui.add(
                    egui::TextEdit::singleline(&mut shared.learner)
                        .id(egui::Id::NULL.with("design-name-box"))
                        .desired_width(200.0),
                )
                .labelled_by(label.id);
            });
        }
    }
    /// The block as its chain of ops, the matrices clickable, the collectives where they happen,
    /// the first broken rule where it happens.
    fn block_ui(
        &mut self,
        ui: &mut egui::Ui,
        shared: &Shared,
        r: &DesignReport,
        cfg: &Config,
        lang: Lang,
        acts: &mut Vec<DesignAction>,
    ) {
        let presenter = shared.presenter;
        let lab = &shared.design;
        let setup = lab.setup();
        let free: Vec<Weight> = lab
            .challenge()
            .map_or_else(|| Weight::ALL.to_vec(), |c| c.free.clone());
        // A class is shown the layer: on a projector its title opens the chain's first row (the
        // instructions one hover away) and the switches close its last, so that the error and
        // its fixes fit above the fold at 1280×720.
        if !presenter {
            ui.label(egui::RichText::new(t(lang, "design-block")).strong());
            ui.weak(t(lang, "design-click-matrix"));
        }
        let p = &r.program;
        // The refused op: the step after the first value a GPU misreads.
        let misread = p
            .forward
            .iter()
            .position(|s| matches!(s, Step::Redistribute(d) if p.value(d.to).mislabelled));
        // The op the first error names: the reader of the misread value, or the op a useless
        // collective follows.
        let error_step: Option<usize> = r.errors.first().and_then(|e| {
            use tplab_engine::block::design::ErrorAt;
            let after = misread.unwrap_or(0);
            p.forward.iter().enumerate().position(|(i, s)| match e.at {
                ErrorAt::Op(site) => i >= after && step_site(s, i, p) == Some(site),
                ErrorAt::Residual => i >= after && matches!(s, Step::Residual { .. }),
                ErrorAt::Collective(site) => step_site(s, i, p) == Some(site),
            })
        });
        let manual = setup.manual.is_some();
        // Hand-placed collectives the program could not place (they have nothing to do): drawn
        // where they were placed, in red, so that each can be removed where it is seen.
        let unplaced = unplaced_collectives(setup.manual.as_deref().unwrap_or(&[]), p);
        let mut change: Vec<DesignAction> = Vec::new();
        let mut row = |ui: &mut egui::Ui, steps: &[(usize, &Step)], first: bool, last: bool| {
            ui.horizontal_wrapped(|ui| {
                ui.spacing_mut().item_spacing.x = 4.0;
                if presenter {
                    ui.spacing_mut().item_spacing.y = 2.0;
                }
                if first && presenter {
                    ui.label(egui::RichText::new(t(lang, "design-block")).strong())
                        .on_hover_text(t(lang, "design-click-matrix"));
                }
                for &(i, s) in steps {
                    let reader_error = error_step == Some(i);
                    let site = step_site(s, i, p);
                    match s {
                        Step::Linear { weight, .. } => {
                            let split = p.plan.split(*weight);
                            let can = free.contains(weight);
                            let resp =
                                matrix_button(ui, lang, *weight, split, cfg.tp, can, reader_error);
                            if crate::platform::WEB {
                                crate::platform::mark(
                                    &format!("design-matrix-{}", weight.symbol()),
                                    resp.rect,
                                );
                            }
                            if resp.clicked() && can {
                                change.push(DesignAction::SetSplit(*weight, cycle(split)));
                            }
                        }
                        Step::Redistribute(d) if p.value(d.to).mislabelled => {
                            label_chip(
                                ui,
                                &t(lang, "design-nothing-here"),
                                ui.visuals().error_fg_color,
                                true,
                            );
                        }
                        Step::Redistribute(d) => {
                            if d.mv == Move::Slice {
                                label_chip(
                                    ui,
                                    &t(lang, "design-slice"),
                                    ui.visuals().weak_text_color(),
                                    false,
                                )
                                .on_hover_text(t(lang, "design-slice-why"));
                                continue;
                            }
                            let from = p.value(d.from);
                            let to = p.value(d.to);
                            let label = d.mv.name().to_string();
                            // A hand-placed collective is removed by a click; the rules' own
                            // only say why they are there.
                            let resp = if d.manual && manual {
                                chip(ui, &label, collective_color(ui), true)
                            } else {
                                label_chip(ui, &label, collective_color(ui), true)
                            };
                            let why = t_args(
                                lang,
                                "design-collective-why",
                                &[
                                    ("tensor", from.tensor.name().to_string()),
                                    ("from", place_words(lang, from.place)),
                                    ("to", place_words(lang, to.place)),
                                ],
                            );
                            let resp = if d.manual && manual {
                                resp.on_hover_text(format!(
                                    "{why}\n{}",
                                    t(lang, "design-click-remove")
                                ))
                            } else {
                                resp.on_hover_text(why)
                            };
                            if resp.clicked() && d.manual && manual {
                                if let (Some(site), Some(kind)) = (
                                    tplab_engine::block::design::site_of(from.tensor),
                                    d.mv.manual_kind(),
                                ) {
                                    change
                                        .push(DesignAction::RemoveCollective { after: site, kind });
                                }
                            }
                        }
                        _ => {
                            let colour = if reader_error {
                                ui.visuals().error_fg_color
                            } else {
                                ui.visuals().text_color()
                            };
                            label_chip(ui, &op_words(lang, s, p), colour, reader_error);
                        }
                    }
                    if let Some(site) = site {
                        for &(after, kind) in unplaced.iter().filter(|(a, _)| *a == site) {
                            let resp = chip(
                                ui,
                                &t_args(
                                    lang,
                                    "design-unplaced",
                                    &[("kind", kind.name().to_string())],
                                ),
                                ui.visuals().error_fg_color,
                                true,
                            )
                            .on_hover_text(t(lang, "design-click-remove"));
                            if resp.clicked() {
                                change.push(DesignAction::RemoveCollective { after, kind });
                            }
                        }
                    }
                    if manual {
                        if let Some(site) = site {
                            let menu = ui.menu_button("+", |ui| {
                                for kind in MANUAL_KINDS {
                                    if ui.button(kind.name()).clicked() {
                                        change.push(DesignAction::AddCollective {
                                            after: site,
                                            kind,
                                        });
                                        ui.close();
                                    }
                                }
                            });
                            let add =
                                t_args(lang, "design-add-here", &[("op", site_words(lang, site))]);
                            // Named for a screen reader as it is for the eye on hover.
                            menu.response.widget_info(|| {
                                egui::WidgetInfo::labeled(egui::Role::Button, true, &add)
                            });
                            menu.response.on_hover_text(add);
                        }
                    }
                    crate::widgets::separator_mark(ui);
                }
                if last && presenter {
                    ui.add_space(8.0);
                    switches(ui, lang, setup, true, &mut change);
                }
            });
        };
        let steps: Vec<(usize, &Step)> = p.forward.iter().enumerate().collect();
        let split_at = steps
            .iter()
            .position(|(_, s)| {
                matches!(
                    s,
                    Step::LayerNorm {
                        norm: Norm::Ln2,
                        ..
                    }
                )
            })
            .unwrap_or(steps.len());
        row(ui, &steps[..split_at], true, false);
        row(ui, &steps[split_at..], false, true);
        if !presenter {
            ui.horizontal_wrapped(|ui| {
                switches(ui, lang, setup, false, &mut change);
            });
        }
        if let Some(e) = r.errors.first() {
            ui.add_space(4.0);
            egui::Frame::group(ui.style())
                .stroke(egui::Stroke::new(2.0, ui.visuals().error_fg_color))
                .show(ui, |ui| {
                    ui.colored_label(ui.visuals().error_fg_color, rule_text(lang, e.kind, e));
                    // A challenge whose answer is a hand-placed collective (repair the program)
                    // would be given away by its fix button: the fixes wait for the hint, which
                    // costs the third star; the "+" between the ops is the way to try first.
                    let held_back = lab
                        .challenge()
                        .is_some_and(|c| c.answer_places_collectives() && !lab.hinted(c.stage));
                    if held_back {
                        ui.horizontal_wrapped(|ui| {
                            ui.label(t(lang, "design-fixes-held"));
                            if ui
                                .button(t(lang, "design-fixes-show"))
                                .on_hover_text(t(lang, "design-hint-cost"))
                                .clicked()
                            {
                                change.push(DesignAction::ShowHint);
                            }
                        });
                    } else {
                        ui.horizontal_wrapped(|ui| {
                            ui.label(t(lang, "design-fixes"));
                            for fix in &e.actions {
                                if matches!(fix, Fix::Slice) {
                                    continue;
                                }
                                let allowed = match fix {
                                    Fix::Split { weight, .. } => free.contains(weight),
                                    _ => true,
                                };
                                if ui
                                    .add_enabled(allowed, egui::Button::new(fix_text(lang, fix)))
                                    .clicked()
                                {
                                    change.push(DesignAction::ApplyFix(*fix));
                                }
                            }
                        });
                    }
                    let mut anyway = lab.run_anyway();
                    if ui
                        .checkbox(&mut anyway, t(lang, "design-run-anyway"))
                        .changed()
                    {
                        change.push(DesignAction::SetRunAnyway(anyway));
                    }
                });
        }
        acts.extend(change);
    }

    /// The verdict against the reference and the price beside Megatron's plan.
    /// `beside`: drawn to the right of the layer (else below it), where the refusal points to
    /// the broken rule.
    fn costs_ui(
        &self,
        ui: &mut egui::Ui,
        r: &DesignReport,
        cfg: &Config,
        lang: Lang,
        beside: bool,
        (goal_open, goal_checked): (bool, bool),
    ) {
        ui.label(egui::RichText::new(t(lang, "design-costs")).strong());
        let ok = crate::widgets::ok_ink(ui);
        let bad = ui.visuals().error_fg_color;
        let err = r
            .max_rel_error
            .map_or_else(String::new, |e| crate::i18n::sci(lang, e, 1));
        match (r.valid, r.equal_to_reference) {
            (true, Some(true)) if goal_open => {
                let id = if goal_checked {
                    "design-equal-goal-missed"
                } else {
                    "design-equal-goal-open"
                };
                ui.label(t_args(
                    lang,
                    id,
                    &[
                        ("error", err),
                        ("tol", crate::i18n::sci(lang, r.tolerance, 0)),
                    ],
                ));
            }
            (true, Some(true)) => {
                ui.colored_label(
                    ok,
                    t_args(
                        lang,
                        "design-equal",
                        &[
                            ("error", err),
                            ("tol", crate::i18n::sci(lang, r.tolerance, 0)),
                        ],
                    ),
                );
            }
            (_, Some(false)) => {
                ui.colored_label(
                    bad,
                    t_args(
                        lang,
                        "design-differs",
                        &[
                            ("error", err),
                            ("tol", crate::i18n::sci(lang, r.tolerance, 0)),
                        ],
                    ),
                );
            }
            (false, None) => {
                let id = if beside {
                    "design-refused"
                } else {
                    "design-refused-above"
                };
                ui.colored_label(bad, t(lang, id));
            }
            _ => {}
        }
        if !r.per_tensor.is_empty() {
            let passed = r.per_tensor.iter().filter(|c| c.passed).count();
            ui.label(t_args(
                lang,
                "design-tensors",
                &[
                    ("passed", passed.to_string()),
                    ("total", r.per_tensor.len().to_string()),
                ],
            ));
        }
        let counts = |m: &std::collections::BTreeMap<&'static str, usize>| -> String {
            if m.values().all(|n| *n == 0) {
                return t(lang, "design-none");
            }
            m.iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{n} × {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // The values wrap in the room the grid leaves them (a phone's narrow column).
        let wrapped = |ui: &mut egui::Ui, text: String| {
            ui.add(egui::Label::new(text).wrap());
        };
        egui::Grid::new("design-costs-grid")
            .num_columns(2)
            .spacing([12.0, 4.0])
            .show(ui, |ui| {
                ui.label(t(lang, "design-forward"));
                wrapped(ui, counts(&r.price.collectives.forward));
                ui.end_row();
                ui.label(t(lang, "design-backward"));
                wrapped(ui, counts(&r.price.collectives.backward));
                ui.end_row();
                ui.label(t(lang, "design-bytes"));
                // A refused plan breaks a rule (often a missing collective): no ratio that
                // would read as "cheaper than Megatron's split".
                let vs = match r.vs_megatron.bytes_ratio {
                    _ if !r.errors.is_empty() => t(lang, "design-vs-megatron-refused"),
                    Some(x) => t_args(lang, "design-vs-megatron", &[("x", num(lang, x, 1))]),
                    None => String::new(),
                };
                wrapped(
                    ui,
                    format!(
                        "{} {vs}",
                        crate::i18n::bytes(lang, r.price.bytes_sent_per_rank)
                    ),
                );
                ui.end_row();
                ui.label(t(lang, "design-weights"));
                let whole = whole_weight_bytes(cfg);
                wrapped(
                    ui,
                    t_args(
                        lang,
                        "design-of-whole",
                        &[
                            (
                                "have",
                                crate::i18n::bytes(lang, r.price.weight_bytes_per_gpu),
                            ),
                            ("whole", crate::i18n::bytes(lang, whole)),
                        ],
                    ),
                );
                ui.end_row();
                ui.label(t(lang, "design-activations"));
                ui.label(crate::i18n::bytes(lang, r.price.activation_bytes_per_gpu));
                ui.end_row();
            });
        ui.weak(t_args(
            lang,
            "design-layer",
            &[
                ("hidden", cfg.hidden.to_string()),
                ("heads", cfg.heads.to_string()),
                ("kv", cfg.kv_heads.unwrap_or(cfg.heads).to_string()),
                ("tokens", cfg.tokens().to_string()),
                ("tp", cfg.tp.to_string()),
                ("bits", (8 * cfg.dtype.size_bytes()).to_string()),
                ("bytes", cfg.dtype.size_bytes().to_string()),
            ],
        ));
    }
}

const MANUAL_KINDS: [ManualKind; 4] = [
    ManualKind::AllReduce,
    ManualKind::ReduceScatter,
    ManualKind::AllGather,
    ManualKind::AllToAll,
];

/// The sequence-parallelism and place-it-myself switches (`short`: the first one's label
/// without its explanation); a switch flipped asks for its action.
fn switches(
    ui: &mut egui::Ui,
    lang: Lang,
    setup: &crate::lab::design::Setup,
    short: bool,
    change: &mut Vec<DesignAction>,
) {
    let mut sp = setup.sequence_parallel;
    // Short on a projector: the whole sentence is one hover away.
    let label = t(
        lang,
        if short {
            "design-sp-short"
        } else {
            "design-sp"
        },
    );
    let check = ui.checkbox(&mut sp, label);
    let check = if short {
        check.on_hover_text(t(lang, "design-sp"))
    } else {
        check
    };
    if check.changed() {
        change.push(DesignAction::SetSequenceParallel(sp));
    }
    let mut by_hand = setup.manual.is_some();
    if ui
        .checkbox(&mut by_hand, t(lang, "design-by-hand"))
        .on_hover_text(t(lang, "design-by-hand-hint"))
        .changed()
    {
        // On: start from what the rules placed; the learner removes or moves from there.
        change.push(DesignAction::SetManual(by_hand));
    }
}

/// The hand-placed collectives at each site that the program did not place (each has nothing to
/// do), in the learner's order.
fn unplaced_collectives(
    manual: &[(Site, ManualKind)],
    p: &tplab_engine::block::design::Program,
) -> Vec<(Site, ManualKind)> {
    let mut placed: Vec<(Site, ManualKind)> = p
        .forward
        .iter()
        .filter_map(|s| match s {
            Step::Redistribute(d) if d.manual => Some((
                tplab_engine::block::design::site_of(p.value(d.from).tensor)?,
                d.mv.manual_kind()?,
            )),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for &c in manual {
        match placed.iter().position(|x| *x == c) {
            Some(i) => {
                placed.remove(i);
            }
            None => out.push(c),
        }
    }
    out
}

/// The hint, check and restart buttons, the best stars and the next challenge's button.
fn challenge_buttons(
    ui: &mut egui::Ui,
    lab: &crate::lab::design::DesignLab,
    c: &Challenge,
    count: Option<String>,
    acts: &mut Vec<DesignAction>,
) {
    let lang = crate::widgets::lang(ui);
    let n = challenges().len();
    if !lab.hinted(c.stage)
        && ui
            .button(t(lang, "design-hint"))
            .on_hover_text(t(lang, "design-hint-cost"))
            .clicked()
    {
        acts.push(DesignAction::ShowHint);
    }
    let check = ui.button(t(lang, "design-check"));
    crate::platform::mark("design-check", check.rect);
    if check.clicked() {
        acts.push(DesignAction::Check);
    }
    if ui.button(t(lang, "design-restart")).clicked() {
        acts.push(DesignAction::Restart);
    }
    let best = lab.stars(c.id);
    // One tooltip: the rule, and on a projector the count of solved challenges under it (two
    // stacked tooltips covered "Next challenge").
    let hover = match &count {
        Some(count) => format!("{}\n{count}", t(lang, "design-stars-rule")),
        None => t(lang, "design-stars-rule"),
    };
    let stars = ui
        .label(egui::RichText::new(star_text(best)).size(20.0))
        .on_hover_text(hover);
    let spoken = t_args(lang, "design-stars-spoken", &[("n", best.to_string())]);
    stars.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Label, true, &spoken));
    // What a star is for, on screen (a class cannot hover): on this row where it fits, else
    // on the next; a projector's short screen keeps it on hover rather than give it a line.
    let rule = t(lang, "design-stars-short");
    let short = crate::widgets::short_screen(ui.ctx());
    if !short || ui.available_size_before_wrap().x >= crate::widgets::body_text_width(ui, &[&rule])
    {
        ui.add(egui::Label::new(egui::RichText::new(rule).weak()).extend());
    }
    if c.stage < n && best > 0 && ui.button(t(lang, "design-next")).clicked() {
        acts.push(DesignAction::SelectStage(c.stage + 1));
    }
}

/// "Step through my plan": the walkthrough on this plan's own trace, enabled exactly when the
/// engine gives the plan on screen a trace; a refused plan says why it has none.
fn walk_ui(
    ui: &mut egui::Ui,
    lang: Lang,
    shared: &mut Shared,
    walk: &Result<std::sync::Arc<tplab_engine::trace::Trace>, WalkRefusal>,
) {
    let button = ui
        .horizontal(|ui| ui.add_enabled(walk.is_ok(), egui::Button::new(t(lang, "design-walk"))))
        .inner;
    crate::platform::mark("design-walk", button.rect);
    let button = match walk {
        Ok(_) => button.on_hover_text(t(lang, "design-walk-hint")),
        Err(why) => button.on_disabled_hover_text(walk_error_text(lang, why)),
    };
    if button.clicked() && walk.is_ok() {
        shared.act(Action::StepThroughMyPlan);
    }
}

/// "Copy my plan" (a plan file, or `tplab design` flags) and a box to paste one into.
fn plan_copy_ui(ui: &mut egui::Ui, lang: Lang, shared: &mut Shared) {
    let plan = shared.design.plan();
    ui.horizontal_wrapped(|ui| {
        if ui
            .button(t(lang, "design-copy-file"))
            .on_hover_text(t(lang, "design-copy-file-hint"))
            .clicked()
        {
            ui.ctx().copy_text(plan.to_toml());
        }
        match plan.to_flags() {
            Some(flags) => {
                if ui
                    .button(t(lang, "design-copy-flags"))
                    .on_hover_text(t(lang, "design-copy-flags-hint"))
                    .clicked()
                {
                    ui.ctx().copy_text(format!("tplab design {flags}"));
                }
            }
            None => {
                ui.add_enabled(false, egui::Button::new(t(lang, "design-copy-flags")))
                    .on_disabled_hover_text(t(lang, "design-copy-flags-manual"));
            }
        }
    });
    let id = egui::Id::NULL.with("design-paste");
    let mut text: String = ui.data_mut(|d| d.get_temp(id).unwrap_or_default());
    let mut error: Option<String> = ui.data_mut(|d| d.get_temp(id.with("error")));
    ui.horizontal_wrapped(|ui| {
        let label = ui.weak(t(lang, "design-paste"));
        ui.add(
            egui::TextEdit::multiline(&mut text)
                .desired_rows(1)
                .hint_text(t(lang, "design-paste-hint"))
                .desired_width((ui.available_width() - 120.0).clamp(120.0, 320.0)),
        )
        .labelled_by(label.id);
        if ui
            .add_enabled(
                !text.trim().is_empty(),
                egui::Button::new(t(lang, "design-paste-use")),
            )
            .clicked()
        {
            match tplab_engine::block::design::ShardingPlan::from_text(&text) {
                Ok(p) => {
                    shared.act(Action::Design(DesignAction::SetPlan(p)));
                    text.clear();
                    error = None;
                }
                Err(e) => error = Some(e.to_string()),
            }
        }
    });
    if let Some(e) = &error {
        ui.colored_label(ui.visuals().error_fg_color, e);
    }
    ui.data_mut(|d| {
        d.insert_temp(id, text);
        if let Some(e) = error {
            d.insert_temp(id.with("error"), e);
        } else {
            d.remove::<String>(id.with("error"));
        }
    });
}

/// Parameter bytes of the whole model (every GPU's share if nothing were split).
fn whole_weight_bytes(cfg: &Config) -> u64 {
    let eb = cfg.dtype.size_bytes() as u64;
    let per_layer: usize = tplab_engine::params::ParamKind::ALL
        .iter()
        .map(|k| {
            let [r, c] = k.shape(cfg);
            r * c
        })
        .sum();
    per_layer as u64 * cfg.layers as u64 * eb
}

fn cycle(s: Split) -> Split {
    match s {
        Split::Replicate => Split::Columns,
        Split::Columns => Split::Rows,
        Split::Rows => Split::Replicate,
    }
}

fn collective_color(ui: &egui::Ui) -> egui::Color32 {
    if ui.visuals().dark_mode {
        egui::Color32::from_rgb(0xF0, 0xA0, 0x40)
    } else {
        egui::Color32::from_rgb(0xA0, 0x50, 0x00)
    }
}

/// A framed piece of text with an optional icon of `icon` × `icon` points before it, drawn
/// with the painter so that the widget is one node for screen readers and tests.
fn framed(
    ui: &mut egui::Ui,
    text: &str,
    colour: egui::Color32,
    stroke: egui::Stroke,
    icon: f32,
    sense: egui::Sense,
) -> (egui::Response, egui::Rect) {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let galley = ui.painter().layout_no_wrap(text.to_string(), font, colour);
    let pad = egui::vec2(6.0, 3.0);
    let gap = if icon > 0.0 { 6.0 } else { 0.0 };
    let h = galley.size().y.max(icon) + 2.0 * pad.y;
    let w = galley.size().x + icon + gap + 2.0 * pad.x;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(w, h), sense);
    let p = ui.painter();
    p.rect_stroke(rect, 6.0, stroke, egui::StrokeKind::Inside);
    let icon_rect = egui::Rect::from_min_size(
        egui::pos2(rect.left() + pad.x, rect.center().y - icon / 2.0),
        egui::vec2(icon, icon),
    );
    p.galley(
        egui::pos2(
            rect.left() + pad.x + icon + gap,
            rect.center().y - galley.size().y / 2.0,
        ),
        galley,
        colour,
    );
    // A screen reader hears a button where a click does something, a label elsewhere.
    let role = if sense.senses_click() {
        egui::Role::Button
    } else {
        egui::Role::Label
    };
    resp.widget_info(|| egui::WidgetInfo::labeled(role, true, text));
    (resp, icon_rect)
}

/// An op of the chain: its words in a rounded frame (`strong`: outlined in `colour`).
fn chip(ui: &mut egui::Ui, text: &str, colour: egui::Color32, strong: bool) -> egui::Response {
    let stroke = egui::Stroke::new(if strong { 2.0 } else { 1.0 }, colour);
    framed(ui, text, colour, stroke, 0.0, egui::Sense::click()).0
}

/// A chip that only says something (an op, a slice): read as text, hovered for its why, never
/// offered as a button.
fn label_chip(
    ui: &mut egui::Ui,
    text: &str,
    colour: egui::Color32,
    strong: bool,
) -> egui::Response {
    let stroke = egui::Stroke::new(if strong { 2.0 } else { 1.0 }, colour);
    framed(ui, text, colour, stroke, 0.0, egui::Sense::hover()).0
}

/// A weight as a clickable matrix: stripes in the GPUs' colours show its split.
fn matrix_button(
    ui: &mut egui::Ui,
    lang: Lang,
    w: Weight,
    split: Split,
    tp: usize,
    enabled: bool,
    error: bool,
) -> egui::Response {
    let dark = ui.visuals().dark_mode;
    let size = ui.text_style_height(&egui::TextStyle::Body) * 1.6;
    let text = format!("{} · {}", weight_words(lang, w), split_words(lang, split));
    let stroke = egui::Stroke::new(
        if error { 2.5 } else { 1.5 },
        if error {
            ui.visuals().error_fg_color
        } else {
            ui.visuals().widgets.inactive.fg_stroke.color
        },
    );
    let sense = if enabled {
        egui::Sense::click()
    } else {
        egui::Sense::hover()
    };
    let (resp, rect) = framed(ui, &text, ui.visuals().text_color(), stroke, size, sense);
    let painter = ui.painter();
    let n = tp.max(1);
    if split == Split::Replicate {
        painter.rect_filled(rect, 2.0, ui.visuals().widgets.inactive.bg_fill);
    } else {
        for r in 0..n {
            let f0 = r as f32 / n as f32;
            let f1 = (r + 1) as f32 / n as f32;
            let part = match split {
                Split::Columns => egui::Rect::from_x_y_ranges(
                    rect.left() + f0 * rect.width()..=rect.left() + f1 * rect.width(),
                    rect.y_range(),
                ),
                _ => egui::Rect::from_x_y_ranges(
                    rect.x_range(),
                    rect.top() + f0 * rect.height()..=rect.top() + f1 * rect.height(),
                ),
            };
            painter.rect_filled(part, 0.0, gpu_color(r, dark));
        }
    }
    painter.rect_stroke(
        rect,
        2.0,
        egui::Stroke::new(1.0, ui.visuals().text_color()),
        egui::StrokeKind::Inside,
    );
    let resp = if enabled {
        resp.on_hover_text(t(lang, "design-cycle"))
    } else {
        resp.on_hover_text(t(lang, "design-fixed-weight"))
    };
    if enabled && resp.hovered() {
        ui.ctx().set_cursor_icon(egui::CursorIcon::PointingHand);
    }
    resp
}

/// What every GPU holds after each op: one row per GPU, one cell per value of the program.
fn lanes_ui(ui: &mut egui::Ui, r: &DesignReport, cfg: &Config, lang: Lang) {
    let p = &r.program;
    ui.label(egui::RichText::new(t(lang, "design-lanes")).strong());
    ui.weak(t(lang, "design-lanes-key"));
    let dark = ui.visuals().dark_mode;
    let error = ui.visuals().error_fg_color;
    // Each column: the value, and the op that made it (none for the layer's input).
    let mut values = vec![p.input];
    let mut ops: Vec<Option<String>> = vec![None];
    // Whether each column is a collective's output.
    let mut after_collective = vec![false];
    for s in &p.forward {
        let out = match s {
            // A bias keeps its input's placement: no column of its own.
            Step::Bias { .. } => continue,
            Step::LayerNorm { y, .. } | Step::Linear { y, .. } => *y,
            Step::Residual { y, .. } => *y,
            Step::Attention { ctx, .. } => *ctx,
            Step::Gelu { u, .. } => *u,
            Step::Redistribute(d) => d.to,
        };
        values.push(out);
        ops.push(Some(op_words(lang, s, p)));
        after_collective.push(matches!(s, Step::Redistribute(_)));
    }
    // Drawn with the painter into the width given: every column fits, whatever the window.
    let body = ui.text_style_height(&egui::TextStyle::Body);
    // Column heads a little under the body size: egui's small type (9 px) is too small to read.
    let small = egui::FontId::proportional(0.85 * ui.text_style_height(&egui::TextStyle::Body));
    let label_w = ui
        .painter()
        .layout_no_wrap(
            format!("GPU {}", cfg.tp.saturating_sub(1)),
            egui::TextStyle::Body.resolve(ui.style()),
            egui::Color32::WHITE,
        )
        .size()
        .x
        + 8.0;
    let width = ui.available_width();
    let n = values.len().max(1);
    let col_w = ((width - label_w) / n as f32).min(body * 3.0);
    let row_h = body * 1.4;
    let head_h = small.size * 1.4;
    let (rect, _) = ui.allocate_exact_size(
        egui::vec2(label_w + col_w * n as f32, head_h + row_h * cfg.tp as f32),
        egui::Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    for (i, &v) in values.iter().enumerate() {
        let x = rect.left() + label_w + col_w * (i as f32 + 0.5);
        let tensor = p.value(v).tensor;
        let name = painter.text(
            egui::pos2(x, rect.top() + head_h / 2.0),
            egui::Align2::CENTER_CENTER,
            tensor.name(),
            small.clone(),
            ui.visuals().weak_text_color(),
        );
        // A tensor after a collective (the same letter twice: before and after it) has the
        // walkthrough strip's diamond before its letter.
        if after_collective[i] {
            let c = egui::pos2(name.left() - 0.45 * small.size, name.center().y);
            let r = 0.3 * small.size;
            painter.add(egui::Shape::convex_polygon(
                vec![
                    egui::pos2(c.x, c.y - r),
                    egui::pos2(c.x + r, c.y),
                    egui::pos2(c.x, c.y + r),
                    egui::pos2(c.x - r, c.y),
                ],
                egui::Color32::TRANSPARENT,
                egui::Stroke::new(1.2, ui.visuals().text_color()),
            ));
        }
        // The letter in words, and the op whose output the column is.
        let meaning = crate::widgets::words::activation_meaning(lang, tensor);
        let words = match &ops[i] {
            Some(op) => t_args(
                lang,
                "design-lanes-column",
                &[
                    ("op", op.clone()),
                    ("tensor", tensor.name().to_string()),
                    ("meaning", meaning),
                ],
            ),
            None => format!("{}: {meaning}", tensor.name()),
        };
        let head = egui::Rect::from_center_size(
            egui::pos2(x, rect.top() + head_h / 2.0),
            egui::vec2(col_w, head_h),
        );
        let resp = ui.interact(
            head,
            ui.scope_id().with(("design-head", i)),
            egui::Sense::hover(),
        );
        crate::widgets::a11y_label(&resp, &words);
        resp.on_hover_text(words);
    }
    for rank in 0..cfg.tp {
        let y0 = rect.top() + head_h + row_h * rank as f32;
        painter.text(
            egui::pos2(rect.left(), y0 + row_h / 2.0),
            egui::Align2::LEFT_CENTER,
            format!("GPU {rank}"),
            egui::TextStyle::Body.resolve(ui.style()),
            crate::widgets::gpu_ink(rank, dark),
        );
        for (i, &v) in values.iter().enumerate() {
            let val = p.value(v);
            let cellr = egui::Rect::from_min_size(
                egui::pos2(rect.left() + label_w + col_w * i as f32, y0),
                egui::vec2(col_w, row_h),
            )
            .shrink(1.5);
            // As the walkthrough's lanes draw them: what a GPU holds in its own colour, a
            // partial sum paler (one term of the sum), a misread value red and outlined.
            let fill = match val.place {
                Place::Partial => gpu_color(rank, dark).gamma_multiply(0.45),
                _ => gpu_color(rank, dark),
            };
            let fill = if val.mislabelled { error } else { fill };
            painter.rect_filled(cellr, 3.0, fill);
            if val.mislabelled {
                painter.rect_stroke(
                    cellr,
                    3.0,
                    egui::Stroke::new(2.0, ui.visuals().strong_text_color()),
                    egui::StrokeKind::Inside,
                );
            }
            let ink = egui::Stroke::new(1.5, text_on(fill));
            // Columns: vertical bars; tokens: horizontal bars; a partial sum: Σ.
            match val.place {
                Place::Features => {
                    for k in 1..4 {
                        let x = cellr.left() + cellr.width() * k as f32 / 4.0;
                        painter.line_segment(
                            [
                                egui::pos2(x, cellr.top() + 3.0),
                                egui::pos2(x, cellr.bottom() - 3.0),
                            ],
                            ink,
                        );
                    }
                }
                Place::Tokens => {
                    for k in 1..4 {
                        let y = cellr.top() + cellr.height() * k as f32 / 4.0;
                        painter.line_segment(
                            [
                                egui::pos2(cellr.left() + 3.0, y),
                                egui::pos2(cellr.right() - 3.0, y),
                            ],
                            ink,
                        );
                    }
                }
                Place::Partial => {
                    painter.text(
                        cellr.center(),
                        egui::Align2::CENTER_CENTER,
                        "Σ",
                        egui::FontId::proportional(row_h * 0.6),
                        text_on(fill),
                    );
                }
                Place::Replicate => {}
            }
            let args = [
                ("gpu", rank.to_string()),
                ("what", place_words(lang, val.place)),
                ("tensor", val.tensor.name().to_string()),
            ];
            let words = match &ops[i] {
                Some(op) => {
                    let mut args = args.to_vec();
                    args.push(("op", op.clone()));
                    t_args(lang, "design-holds-after", &args)
                }
                None => t_args(lang, "design-holds", &args),
            };
            let words = if val.mislabelled {
                format!("{words}\n{}", t(lang, "design-misread"))
            } else {
                words
            };
            let resp = ui.interact(
                cellr,
                ui.scope_id().with(("design-lane", rank, i)),
                egui::Sense::hover(),
            );
            crate::widgets::a11y_label(&resp, &words);
            resp.on_hover_text(words);
        }
    }
    // The letters' key: every column's tensor in words.
    let key = crate::widgets::words::legend(
        lang,
        values
            .iter()
            .map(|&v| tplab_engine::block::TensorName::Act(p.value(v).tensor)),
    );
    ui.label(
        egui::RichText::new(t_args(lang, "lanes-key", &[("legend", key)]))
            .size(0.85 * ui.text_style_height(&egui::TextStyle::Body))
            .color(ui.visuals().weak_text_color()),
    );
}

/// The site a step's output belongs to (where a hand-placed collective after it goes).
fn step_site(s: &Step, i: usize, p: &tplab_engine::block::design::Program) -> Option<Site> {
    match s {
        Step::LayerNorm {
            norm: Norm::Ln1, ..
        } => Some(Site::Ln1),
        Step::LayerNorm {
            norm: Norm::Ln2, ..
        } => Some(Site::Ln2),
        Step::Linear { weight, .. } => Some(match weight {
            Weight::Qkv => Site::Qkv,
            Weight::Out => Site::Out,
            Weight::Fc1 => Site::Fc1,
            Weight::Fc2 => Site::Fc2,
        }),
        Step::Attention { .. } => Some(Site::Attention),
        Step::Gelu { .. } => Some(Site::Gelu),
        // The first residual add (the second is the block's output).
        Step::Residual { .. } => {
            let first = p
                .forward
                .iter()
                .position(|s| matches!(s, Step::Residual { .. }));
            (first == Some(i)).then_some(Site::AttnResidual)
        }
        _ => None,
    }
}

fn op_words(lang: Lang, s: &Step, p: &tplab_engine::block::design::Program) -> String {
    match s {
        Step::LayerNorm {
            norm: Norm::Ln1, ..
        } => t(lang, "design-op-ln1"),
        Step::LayerNorm {
            norm: Norm::Ln2, ..
        } => t(lang, "design-op-ln2"),
        Step::Attention { .. } => t(lang, "design-op-attention"),
        Step::Gelu { .. } => "GeLU".into(),
        Step::Bias { once, .. } => {
            if *once {
                t(lang, "design-op-bias-once")
            } else {
                t(lang, "design-op-bias")
            }
        }
        Step::Residual { y, .. } => {
            if *y == p.output {
                t(lang, "design-op-residual-out")
            } else {
                t(lang, "design-op-residual")
            }
        }
        Step::Linear { weight, .. } => weight_words(lang, *weight),
        // Words, not the engine's move names: a value read as it is not, a free slice, or the
        // collective's own name (all-reduce, all-gather: the lessons keep those in English).
        Step::Redistribute(d) if p.value(d.to).mislabelled => t(lang, "design-op-misread"),
        Step::Redistribute(d) if d.mv == Move::Slice => t(lang, "design-slice"),
        Step::Redistribute(d) => d.mv.name().into(),
    }
}

pub fn fix_text(lang: Lang, f: &Fix) -> String {
    match *f {
        Fix::Collective {
            after,
            kind,
            bytes,
            to,
        } => t_args(
            lang,
            "design-fix-collective",
            &[
                ("kind", kind.name().to_string()),
                ("op", site_words(lang, after)),
                ("bytes", crate::i18n::bytes(lang, bytes)),
                ("to", place_words(lang, to)),
            ],
        ),
        Fix::Slice => t(lang, "design-slice"),
        Fix::Split { weight, split } => t_args(
            lang,
            "design-fix-split",
            &[
                ("weight", weight_words(lang, weight)),
                ("split", split_words(lang, split)),
            ],
        ),
        Fix::Remove { after, kind } => t_args(
            lang,
            "design-fix-remove",
            &[
                ("kind", kind.name().to_string()),
                ("op", site_words(lang, after)),
            ],
        ),
    }
}

/// Why a plan has no trace to step through, in the learner's language.
fn walk_error_text(lang: Lang, e: &WalkRefusal) -> String {
    match e {
        WalkRefusal::Refused(_) => t(lang, "design-walk-refused"),
        WalkRefusal::NoReport(e) => e.clone(),
    }
}

/// A challenge's text in the learner's language (`design-ch-<id>-<part>`; the English file
/// holds the engine's own words, a test checks they agree).
pub fn challenge_text(lang: Lang, c: &Challenge, part: &str) -> String {
    t(lang, &format!("design-ch-{}-{part}", c.id))
}

fn stage_title(lang: Lang, c: &Challenge) -> String {
    format!("{}. {}", c.stage, challenge_text(lang, c, "title"))
}

/// The words for a star a solved plan did not earn.
fn missed_star_key(m: tplab_engine::block::design::challenge::MissedStar) -> &'static str {
    use tplab_engine::block::design::challenge::MissedStar;
    match m {
        MissedStar::Cheaper => "design-missed-cheaper",
        MissedStar::Hint => "design-missed-hint",
        MissedStar::EarlierCheck => "design-missed-earlier-check",
    }
}

fn star_text(stars: u8) -> String {
    (0..3).map(|i| if i < stars { '★' } else { '☆' }).collect()
}
