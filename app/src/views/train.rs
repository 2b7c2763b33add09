//! Train: a tiny character-level GPT trained on the guide at TP 1, 2 and 4 in lockstep, the loss
//! curves drawn on top of each other while it trains. The training is the engine's
//! ([`train::train_curves`]), on a worker thread; this view only draws the losses it reports.

use super::{gpu_color, load_json, save_json, Job, Shared, View};
use egui_plot::{Legend, Line, Plot, PlotPoints};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tplab_engine::train::{self, Corpus, Curves, Optimizer, TrainConfig};
use tplab_engine::DType;

/// The TP sizes trained side by side (the model has 4 heads).
pub const TPS: [usize; 3] = [1, 2, 4];

/// Train view state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Train {
    pub config: TrainConfig,
    #[serde(skip)]
    job: Option<Job<Result<Curves, String>>>,
    #[serde(skip)]
    live: Arc<Mutex<Vec<Vec<f64>>>>,
    #[serde(skip)]
    stop: Arc<AtomicBool>,
    #[serde(skip)]
    result: Option<Result<Curves, String>>,
}

impl Train {
    fn start(&mut self, ctx: &egui::Context) {
        let cfg = self.config.clone();
        let live = Arc::clone(&self.live);
        let stop = Arc::clone(&self.stop);
        stop.store(false, Ordering::SeqCst);
        if let Ok(mut l) = live.lock() {
            l.clear();
        }
        let repaint = ctx.clone();
        self.result = None;
        self.job = Some(Job::spawn(ctx, move || {
            let corpus = Corpus::guide();
            let mut progress = |_step: usize, losses: &[Vec<f64>]| {
                if let Ok(mut l) = live.lock() {
                    *l = losses.to_vec();
                }
                repaint.request_repaint();
                !stop.load(Ordering::SeqCst)
            };
            let r = match cfg.dtype {
                DType::F64 => train::train_curves::<f64>(&cfg, &corpus, &TPS, &mut progress),
                _ => train::train_curves::<f32>(&cfg, &corpus, &TPS, &mut progress),
            };
            r.map_err(|e| e.to_string())
        }));
    }
}

impl View for Train {
    fn id(&self) -> &'static str {
        "train"
    }

    fn title(&self) -> &'static str {
        "Train"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(job) = &mut self.job {
            match job.poll() {
                Some(r) => {
                    self.result = Some(r);
                    self.job = None;
                }
                None => ctx.request_repaint_after(std::time::Duration::from_millis(100)),
            }
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, _shared: &mut Shared) {
        ui.heading("Train: the same model at TP 1, 2 and 4");
        let corpus_len = train::CORPUS.chars().count();
        ui.label(format!(
            "A character-level GPT ({} layers, hidden {}, {} heads) learns to continue the guide \
             ({corpus_len} characters). Each TP size trains its own shards from the same seed on \
             the same batches; the split only reorders additions, so the curves should lie on \
             top of each other.",
            self.config.layers, self.config.hidden, self.config.heads
        ));
        let running = self.job.is_some();
        ui.add_enabled_ui(!running, |ui| {
            ui.horizontal(|ui| {
                let l = ui.label("steps");
                ui.add(egui::DragValue::new(&mut self.config.steps).range(1..=5000))
                    .labelled_by(l.id);
                let l = ui.label("learning rate");
                ui.add(
                    egui::DragValue::new(&mut self.config.lr)
                        .range(1e-5..=1.0)
                        .speed(1e-4),
                )
                .labelled_by(l.id);
                ui.selectable_value(&mut self.config.optimizer, Optimizer::Adam, "Adam");
                ui.selectable_value(&mut self.config.optimizer, Optimizer::Sgd, "SGD");
                ui.selectable_value(&mut self.config.dtype, DType::F32, "f32");
                ui.selectable_value(&mut self.config.dtype, DType::F64, "f64");
                let mut gqa = self.config.kv_heads.is_some();
                if ui
                    .checkbox(&mut gqa, "grouped-query attention (2 KV heads)")
                    .on_hover_text(
                        "The 4 query heads share 2 KV heads. TP=2 gives each GPU one KV head; \
                         TP=4 replicates each KV head on 2 GPUs, which all-reduce the copies' \
                         gradients so that the copies stay identical.",
                    )
                    .changed()
                {
                    self.config.kv_heads = gqa.then_some(2);
                }
            });
        });
        ui.horizontal(|ui| {
            if running {
                if ui.button("Stop").clicked() {
                    self.stop.store(true, Ordering::SeqCst);
                }
            } else if ui.button("Start training").clicked() {
                self.start(ui.ctx());
            }
            let done = self
                .live
                .lock()
                .map(|l| l.first().map_or(0, Vec::len))
                .unwrap_or(0);
            let frac = done as f32 / self.config.steps.max(1) as f32;
            ui.add(
                egui::ProgressBar::new(frac)
                    .desired_width(260.0)
                    .text(format!("step {done}/{}", self.config.steps)),
            );
        });
        if let Some(Err(e)) = &self.result {
            ui.colored_label(ui.visuals().error_fg_color, format!("Training failed: {e}"));
        }
        // Points straight from the shared losses (no intermediate copy of the curves).
        let curves: Vec<Vec<[f64; 2]>> = self
            .live
            .lock()
            .map(|l| {
                l.iter()
                    .map(|c| {
                        c.iter()
                            .enumerate()
                            .map(|(s, &v)| [(s + 1) as f64, v])
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Ok(c)) = &self.result {
            let gaps = c.max_rel_gap();
            ui.label(format!(
                "Finished: loss {:.4} -> {:.4}; largest gap to TP=1 over the run: TP=2 {:.1e}, \
                 TP=4 {:.1e} (relative)",
                c.losses[0].first().copied().unwrap_or(f64::NAN),
                c.losses[0].last().copied().unwrap_or(f64::NAN),
                gaps.get(1).copied().unwrap_or(0.0),
                gaps.get(2).copied().unwrap_or(0.0)
            ));
        }
        let dark = ui.visuals().dark_mode;
        Plot::new("train-curves")
            .legend(Legend::default())
            .height((ui.available_height() - 10.0).max(200.0))
            .x_axis_label("step")
            .y_axis_label("cross-entropy (nats per character)")
            .allow_scroll(false)
            .show(ui, |plot| {
                for (i, pts) in curves.into_iter().enumerate() {
                    // Thinner lines for larger TP, so the ones underneath stay visible.
                    plot.line(
                        Line::new(format!("TP={}", TPS[i]), PlotPoints::from(pts))
                            .color(gpu_color(i, dark))
                            .width(3.0 - i as f32),
                    );
                }
            });
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}
