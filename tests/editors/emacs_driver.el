;;; emacs_driver.el --- drive eglot + flymake against memory-ls in batch mode  -*- lexical-binding: t; -*-
;; Run by test_emacs.py after loading editors/emacs/memory-ls-eglot.el.
;; Environment: MEMORY_FILE, RESULT_FILE.  Exits 0 after writing the report, 1 on failure.
(require 'cl-lib)
(require 'json)
(require 'flymake)

(defun memory-test--write (alist)
  (with-temp-file (getenv "RESULT_FILE")
    (set-buffer-file-coding-system 'utf-8)
    (insert (json-encode alist))))

(defun memory-test--wait (predicate seconds)
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall predicate))) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    value))

(condition-case err
    (let ((report nil))
      (setq eglot-sync-connect 10)
      (find-file (getenv "MEMORY_FILE"))
      (push (cons 'major_mode (symbol-name major-mode)) report)
      ;; eglot-ensure connects from post-command-hook; a batch Emacs runs no commands.
      (run-hooks 'post-command-hook)
      (unless (memory-test--wait (lambda () (eglot-current-server)) 30)
        (error "eglot did not connect"))
      (push (cons 'managed (if eglot--managed-mode t :json-false)) report)
      (let* ((duplicate
              (memory-test--wait
               (lambda ()
                 (flymake-start)
                 (cl-find-if (lambda (d) (string-match-p "\\[duplicate\\]" (flymake-diagnostic-text d)))
                             (flymake-diagnostics)))
               40)))
        (unless duplicate (error "flymake shows no duplicate diagnostic: %S"
                                 (mapcar #'flymake-diagnostic-text (flymake-diagnostics))))
        (push (cons 'diagnostics
                    (vconcat (mapcar (lambda (d)
                                       (list (cons 'text (flymake-diagnostic-text d))
                                             (cons 'type (symbol-name (flymake-diagnostic-type d)))
                                             (cons 'line (line-number-at-pos (flymake-diagnostic-beg d)))
                                             (cons 'column (save-excursion (goto-char (flymake-diagnostic-beg d)) (current-column)))))
                                     (flymake-diagnostics))))
              report))
      ;; A server command through workspace/executeCommand.
      (let ((listed (jsonrpc-request (eglot-current-server) :workspace/executeCommand
                                     (list :command "memory.list" :arguments (vector (list :scope "project"))))))
        (push (cons 'list_project (plist-get listed :project)) report)
        (push (cons 'list_global (plist-get listed :global)) report))
      (memory-test--write report)
      (kill-emacs 0))
  (error
   (memory-test--write (list (cons 'error (format "%S" err))))
   (kill-emacs 1)))
