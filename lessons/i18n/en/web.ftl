# web strings (en). Keep the ids identical in en/ and tr/.
web-progress-title = Quiz progress (kept in this browser)
web-progress-export = Export
web-progress-export-hover = Downloads each learner's progress file, the same file the desktop app keeps in its data folder.
web-progress-import = Import
web-progress-import-hover = Adds the answers and exams of a progress file (from this page or the desktop app) to what this browser holds; nothing is removed.
web-progress-none = No progress saved in this browser yet.
web-progress-exported = Downloaded { $files }.
web-progress-invalid = Not a tplab progress file: { $error }
web-progress-imported = Imported the progress of { $learner }: { $added } new records.
web-gpu-title = Real GPUs need the desktop app
web-gpu-body = A browser cannot reach an NVIDIA GPU's CUDA driver, cuBLAS or NCCL, so the web edition runs every view on virtual GPUs on this computer's processor, with the same numbers. The desktop app (cargo run --release) runs the very same shards on real GPUs, fills the timeline with measured times and checks every tensor against the reference.
