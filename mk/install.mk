# mk/install.mk - make install / make uninstall (included by the Makefile).
#
#   make install   DESTDIR=/tmp/stage prefix=/usr
#   make uninstall DESTDIR=/tmp/stage prefix=/usr
#
# Layout (prefix=/usr, Debian's slurm-wlm plugin directory):
#   $(plugindir)/restore_budget.so            /usr/lib/<multiarch>/slurm-wlm/
#   $(bindir)/restore-budget                  /usr/bin/
#   $(man8dir)/restore_budget.8, $(man1dir)/restore-budget.1
#   $(slurmconfdir)/restore_budget.conf.example
#   $(slurmconfdir)/plugstack.conf.d/restore_budget.conf   (commented out)
#   $(docdir)/README.md, restore-budget-cli.md
#   $(pythondir)/restore_budget/__init__.py    /usr/lib/python3/dist-packages/
#                                             (the job-side module; Debian's
#                                             python3 looks there)
#
# The admin's /etc/slurm/restore_budget.conf is never written: the config
# is installed as .example. The plugstack.conf.d fragment is installed with
# its line commented out, so installing never changes a running cluster
# (config/plugstack.conf.d/restore_budget.conf says why), and an existing
# fragment (the admin enabled it) is kept unless FORCE_CONF=1.
# Slurm reads /etc/slurm whatever the prefix, hence slurmconfdir.

# Override on the command line; MULTIARCH= (empty) gives $(prefix)/lib.
ifeq ($(origin MULTIARCH),undefined)
MULTIARCH := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || \
		     $(CC) -print-multiarch 2>/dev/null)
endif
exec_prefix  ?= $(prefix)
bindir       ?= $(exec_prefix)/bin
libdir       ?= $(exec_prefix)/lib$(if $(MULTIARCH),/$(MULTIARCH))
plugindir    ?= $(libdir)/slurm-wlm
datarootdir  ?= $(prefix)/share
mandir       ?= $(datarootdir)/man
man1dir      ?= $(mandir)/man1
man8dir      ?= $(mandir)/man8
docdir       ?= $(datarootdir)/doc/restore-budget
slurmconfdir ?= /etc/slurm
pythondir    ?= $(prefix)/lib/python3/dist-packages
INSTALL      ?= install

MAN_PAGES  := contrib/man/restore_budget.8 contrib/man/restore-budget.1
PLUGSTACK_FRAGMENT := config/plugstack.conf.d/restore_budget.conf

.PHONY: install uninstall install-files man-check

# The fragment with the real plugin path filled in.
$(BUILD)/plugstack.conf.d/restore_budget.conf: $(PLUGSTACK_FRAGMENT) FORCE_PLUGINDIR
	@mkdir -p $(dir $@)
	sed 's|@PLUGINDIR@|$(plugindir)|g' $< >$@.tmp && mv -f $@.tmp $@

# Rebuilt every time: plugindir depends on the command line, not on files.
.PHONY: FORCE_PLUGINDIR
FORCE_PLUGINDIR:

install: all
	@$(MAKE) --no-print-directory install-files

# install-files installs what is built, without building (for `make deb`,
# whose staging may run as another user than the build).
install-files: $(BUILD)/plugstack.conf.d/restore_budget.conf
	@test -f $(PLUGIN) -a -f $(CLI) || { echo "install: run 'make' first" >&2; exit 1; }
	$(INSTALL) -d $(DESTDIR)$(plugindir) $(DESTDIR)$(bindir) \
		$(DESTDIR)$(man1dir) $(DESTDIR)$(man8dir) $(DESTDIR)$(docdir) \
		$(DESTDIR)$(slurmconfdir)/plugstack.conf.d \
		$(DESTDIR)$(pythondir)/restore_budget
	$(INSTALL) -m 644 $(PLUGIN) $(DESTDIR)$(plugindir)/restore_budget.so
	$(INSTALL) -m 755 $(CLI) $(DESTDIR)$(bindir)/restore-budget
	$(INSTALL) -m 644 contrib/man/restore_budget.8 $(DESTDIR)$(man8dir)/restore_budget.8
	$(INSTALL) -m 644 contrib/man/restore-budget.1 $(DESTDIR)$(man1dir)/restore-budget.1
	$(INSTALL) -m 644 README.md $(DESTDIR)$(docdir)/README.md
	$(INSTALL) -m 644 contrib/cli/README.md $(DESTDIR)$(docdir)/restore-budget-cli.md
	$(INSTALL) -m 644 config/restore_budget.conf \
		$(DESTDIR)$(slurmconfdir)/restore_budget.conf.example
	$(INSTALL) -m 644 contrib/python/restore_budget/__init__.py \
		$(DESTDIR)$(pythondir)/restore_budget/__init__.py
	@f=$(DESTDIR)$(slurmconfdir)/plugstack.conf.d/restore_budget.conf; \
	if [ -e "$$f" ] && [ "$(FORCE_CONF)" != 1 ] && \
	   ! cmp -s $(BUILD)/plugstack.conf.d/restore_budget.conf "$$f"; then \
		echo "install: kept $$f (it differs from ours; FORCE_CONF=1 replaces it)"; \
	else \
		echo "$(INSTALL) -m 644 $(BUILD)/plugstack.conf.d/restore_budget.conf $$f"; \
		$(INSTALL) -m 644 $(BUILD)/plugstack.conf.d/restore_budget.conf "$$f"; \
	fi

# Removes what install put there, except an admin's changed fragment and
# anything the admin made (restore_budget.conf, the state_dir).
uninstall:
	rm -f $(DESTDIR)$(plugindir)/restore_budget.so \
	      $(DESTDIR)$(bindir)/restore-budget \
	      $(DESTDIR)$(man8dir)/restore_budget.8 \
	      $(DESTDIR)$(man1dir)/restore-budget.1 \
	      $(DESTDIR)$(docdir)/README.md \
	      $(DESTDIR)$(docdir)/restore-budget-cli.md \
	      $(DESTDIR)$(slurmconfdir)/restore_budget.conf.example \
	      $(DESTDIR)$(pythondir)/restore_budget/__init__.py
	rm -rf $(DESTDIR)$(pythondir)/restore_budget/__pycache__
	-rmdir $(DESTDIR)$(docdir) $(DESTDIR)$(pythondir)/restore_budget 2>/dev/null
	@f=$(DESTDIR)$(slurmconfdir)/plugstack.conf.d/restore_budget.conf; \
	if [ -e "$$f" ] && grep -q '^[[:space:]]*[^#[:space:]]' "$$f"; then \
		echo "uninstall: kept $$f: it is enabled; comment it out or remove it, then restart slurmd"; \
	else \
		rm -f "$$f"; \
	fi

# groff warnings fail; so does anything man(1) complains about.
man-check: $(MAN_PAGES)
	@for m in $(MAN_PAGES); do \
		out=$$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z $$m 2>&1) || exit 1; \
		if [ -n "$$out" ]; then echo "$$m:"; echo "$$out"; exit 1; fi; \
		out=$$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l $$m 2>&1 >/dev/null); \
		if [ -n "$$out" ]; then echo "$$m:"; echo "$$out"; exit 1; fi; \
		echo "man-check: $$m: no warnings"; \
	done
