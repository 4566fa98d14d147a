;;; memory-ls-eglot.el --- memory-ls with eglot  -*- lexical-binding: t; -*-
;; Emacs 29+ has eglot built in; on Emacs 28 install it (Debian: elpa-eglot,
;; or M-x package-install RET eglot).  Memory files keep Markdown editing:
;; `pi-memory-mode' derives from `markdown-mode' when it is installed.
(require 'eglot)

(defalias 'pi-memory-parent-mode
  (if (fboundp 'markdown-mode) #'markdown-mode #'text-mode))

(define-derived-mode pi-memory-mode pi-memory-parent-mode "Memory"
  "Major mode for agent memory files (.pi/memory.md and the global store).")

;; <repo>/.pi/memory.md and the global store ~/.pi/agent/memory.md
;; (add your $PI_CODING_AGENT_DIR/memory.md if you moved it).
(add-to-list 'auto-mode-alist '("/\\.pi/memory\\.md\\'" . pi-memory-mode))
(add-to-list 'auto-mode-alist '("/\\.pi/agent/memory\\.md\\'" . pi-memory-mode))

(add-to-list 'eglot-server-programs '(pi-memory-mode . ("memory-ls" "serve")))
(add-hook 'pi-memory-mode-hook #'eglot-ensure)
