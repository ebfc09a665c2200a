# mk/packaging.mk - make deb / make rpm / make packaging-test (included by
# the Makefile, after mk/install.mk's variables are known).
#
#   make deb              build/restore-budget_$(VERSION)-$(DEB_REVISION)_<arch>.deb
#   make rpm              build/rpm/RPMS/<arch>/restore-budget-*.rpm (needs rpmbuild)
#   make packaging-test   tests/packaging/deb.sh: build the .deb, install it
#                         here (root), run a job on a private cluster with
#                         the INSTALLED plugin, remove it again
#   make packaging-lint   tests/packaging/lint.sh: build the .deb and the .rpm
#                         (in build/packaging-lint/), lintian and rpmlint
#                         them, check both file lists; host only (the legs'
#                         chroots, which run packaging-test, have no rpm,
#                         rpmlint or lintian). docs/packaging.md
#
# The .deb is made without debhelper: `make install-files` into a staged
# tree, man pages gzipped, binaries stripped, DEBIAN/{control,conffiles,
# md5sums} written here, `dpkg-deb --root-owner-group --build` (no fakeroot
# needed). Depends comes from dpkg-shlibdeps (libc6, libconfig9, libjson-c5)
# plus slurmd of the Slurm release whose spank.h we were built against:
# Slurm refuses to load a plugin built for another release, so the package
# says so instead of failing at the first job.

# One version for the CLI, the .deb and the .spec: RB_CLI_VERSION in
# contrib/cli/cli.h unless given (make deb VERSION=1.2.3 also sets the CLI's
# --version only if the CLI is rebuilt with CPPFLAGS=-DRB_CLI_VERSION=...).
VERSION ?= $(shell sed -n 's/^\#define RB_CLI_VERSION "\(.*\)"/\1/p' contrib/cli/cli.h)
DEB_REVISION ?= 1
DEB_MAINTAINER ?= restore_budget maintainers <root@localhost>
DEB_ARCH ?= $(shell dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null || dpkg --print-architecture)
DEB_PKG  := restore-budget
# The changelog's date: SOURCE_DATE_EPOCH, else the last commit's (the same
# .deb from the same tree), else now (a tree copied without .git).
DEB_DATE = $(shell date -R -u -d @$${SOURCE_DATE_EPOCH:-$$( (git log -1 --format=%ct) 2>/dev/null || date +%s)})
DEB_FILE := $(BUILD)/$(DEB_PKG)_$(VERSION)-$(DEB_REVISION)_$(DEB_ARCH).deb
DEB_DIR  := $(BUILD)/deb
DEB_ROOT := $(DEB_DIR)/debian/$(DEB_PKG)

# The Slurm release of the spank.h we compile against: 22.05 -> depend on
# slurmd (>= 22.05), slurmd (<< 22.06).
SLURM_VERSION_H ?= /usr/include/slurm/slurm_version.h
SLURM_VERSION_HEX := $(shell sed -n 's/^\#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' $(SLURM_VERSION_H) 2>/dev/null)
SLURM_SERIES := $(if $(SLURM_VERSION_HEX),$(shell v=$(SLURM_VERSION_HEX); printf '%d.%02d' $$((v >> 16 & 255)) $$((v >> 8 & 255))))
SLURM_NEXT   := $(if $(SLURM_VERSION_HEX),$(shell v=$(SLURM_VERSION_HEX); printf '%d.%02d' $$((v >> 16 & 255)) $$(((v >> 8 & 255) + 1))))
comma := ,
DEB_SLURM_DEPENDS := slurmd (>= $(or $(SLURM_SERIES),22.05))$(if $(SLURM_NEXT),$(comma) slurmd (<< $(SLURM_NEXT)))

.PHONY: deb deb-name rpm rpm-name packaging-test packaging-lint deb-clean

define DEB_DESCRIPTION
 Slurm SPANK plugin giving requeued batch jobs a restore-retry budget
 restore_budget gives requeueable batch jobs the restore-retry budget Ray
 Tune gives its trials: every requeue is a counted restore attempt, every R
 failed restores count as one failure, the job fails for good after
 max_failures failures, and the checkpoint is never dropped. Includes the
 restore-budget command (show, explain, list, check-config, grant, gc,
 metrics) and the job-side Python module restore_budget (standard library
 only). The plugstack.conf.d line is installed commented out: see
 restore_budget(8) to enable it on every node.
endef
export DEB_DESCRIPTION

deb: $(DEB_FILE)

# (`all` is phony: the .deb is rebuilt on every `make deb`.)
$(DEB_FILE): all contrib/man/restore_budget.8 contrib/man/restore-budget.1 \
		config/plugstack.conf.d/restore_budget.conf config/restore_budget.conf \
		contrib/packaging/copyright mk/packaging.mk mk/install.mk \
		contrib/python/restore_budget/__init__.py
	@test -n "$(VERSION)" || { echo "deb: no VERSION (RB_CLI_VERSION in contrib/cli/cli.h)" >&2; exit 1; }
	rm -rf $(DEB_DIR)
	$(MAKE) --no-print-directory install-files DESTDIR=$(CURDIR)/$(DEB_ROOT) \
		prefix=/usr MULTIARCH=$(MULTIARCH) >/dev/null
	strip --strip-unneeded --remove-section=.comment --remove-section=.note \
		$(DEB_ROOT)$(plugindir_deb)/restore_budget.so $(DEB_ROOT)/usr/bin/restore-budget
	gzip -9n $(DEB_ROOT)/usr/share/man/man1/restore-budget.1 \
		$(DEB_ROOT)/usr/share/man/man8/restore_budget.8
	install -m 644 contrib/packaging/copyright $(DEB_ROOT)/usr/share/doc/$(DEB_PKG)/copyright
	printf '%s\n' '$(DEB_PKG) ($(VERSION)-$(DEB_REVISION)) unstable; urgency=medium' '' \
		'  * Built by make deb from the restore_budget tree (no Debian source' \
		'    package). Changes: README.md.' '' \
		' -- $(DEB_MAINTAINER)  $(DEB_DATE)' \
		| gzip -9n >$(DEB_ROOT)/usr/share/doc/$(DEB_PKG)/changelog.Debian.gz
	mkdir -p $(DEB_ROOT)/DEBIAN $(DEB_DIR)/debian
	printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' $(DEB_PKG) $(DEB_PKG) \
		>$(DEB_DIR)/debian/control
	cd $(DEB_DIR) && dpkg-shlibdeps -O \
		-edebian/$(DEB_PKG)$(plugindir_deb)/restore_budget.so \
		-edebian/$(DEB_PKG)/usr/bin/restore-budget \
		| sed -n 's/^shlibs:Depends=//p' >shlibs.depends
	@test -s $(DEB_DIR)/shlibs.depends || { echo "deb: dpkg-shlibdeps found nothing" >&2; exit 1; }
	{ \
	  echo "Package: $(DEB_PKG)"; \
	  echo "Version: $(VERSION)-$(DEB_REVISION)"; \
	  echo "Architecture: $(DEB_ARCH)"; \
	  echo "Maintainer: $(DEB_MAINTAINER)"; \
	  echo "Installed-Size: $$(du -sk --exclude=DEBIAN $(DEB_ROOT) | cut -f1)"; \
	  echo "Depends: $$(cat $(DEB_DIR)/shlibs.depends), $(DEB_SLURM_DEPENDS)"; \
	  echo "Suggests: python3"; \
	  echo "Section: admin"; \
	  echo "Priority: optional"; \
	  echo "Description:$$DEB_DESCRIPTION"; \
	} >$(DEB_ROOT)/DEBIAN/control
	cd $(DEB_ROOT) && find etc -type f -printf '/%p\n' | sort >DEBIAN/conffiles
	cd $(DEB_ROOT) && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums
	printf '%s\n' '#!/bin/sh' 'set -e' \
		'# bytecode python3 wrote next to the module (an import as root)' \
		'rm -rf $(pythondir_deb)/restore_budget/__pycache__' \
		>$(DEB_ROOT)/DEBIAN/prerm
	chmod 644 $(DEB_ROOT)/DEBIAN/*
	chmod 755 $(DEB_ROOT)/DEBIAN/prerm
	find $(DEB_ROOT) -type d -exec chmod 755 {} +
	dpkg-deb --root-owner-group -Zxz --build $(DEB_ROOT) $@.tmp >/dev/null
	mv -f $@.tmp $@
	@echo "deb: $@"
	@dpkg-deb -f $@ Package Version Architecture Depends

# The plugin directory inside the package (prefix=/usr, this MULTIARCH).
plugindir_deb = /usr/lib$(if $(MULTIARCH),/$(MULTIARCH))/slurm-wlm

# Where Debian's python3 finds the module in the package (prefix=/usr).
pythondir_deb = /usr/lib/python3/dist-packages

# The .deb's path, for scripts: make -s deb-name
deb-name:
	@echo $(DEB_FILE)

deb-clean:
	rm -rf $(DEB_DIR) $(BUILD)/$(DEB_PKG)_*.deb

# RPM: contrib/packaging/restore-budget.spec, from a tarball of the tree.
# On a Debian host (CI here) rpmbuild has no RPM database to check the
# BuildRequires in: --nodeps, and the plugin compiles against the host's
# /usr/include/slurm, whose release the spec's Requires pin (SLURM_SERIES,
# as the .deb's Depends). contrib/packaging/rpm-on-debian.macros makes
# Debian's rpmbuild build as EL's does (debuginfo split, gzipped man pages).
RPM_TOPDIR := $(CURDIR)/$(BUILD)/rpm
RPM_TARBALL := $(RPM_TOPDIR)/SOURCES/restore-budget-$(VERSION).tar.gz
RPM_ON_DEBIAN := $(wildcard /etc/debian_version)
RPMBUILD_FLAGS ?= $(if $(RPM_ON_DEBIAN),--nodeps --load=$(CURDIR)/contrib/packaging/rpm-on-debian.macros)
RPM_DEFINES := $(if $(SLURM_SERIES),--define 'slurm_series $(SLURM_SERIES)' \
		--define 'slurm_next $(SLURM_NEXT)')
RPM_ARCH = $(shell rpm --eval '%{_arch}')
# Release: 1%{?dist} (.el9 on EL 9, nothing on Debian)
RPM_FILE = $(RPM_TOPDIR)/RPMS/$(RPM_ARCH)/restore-budget-$(VERSION)-1$(shell rpm --eval '%{?dist}').$(RPM_ARCH).rpm

rpm:
	@command -v rpmbuild >/dev/null || { echo "rpm: rpmbuild not found (apt-get install rpm, or dnf install rpm-build)" >&2; exit 1; }
	@test -n "$(VERSION)" || { echo "rpm: no VERSION (RB_CLI_VERSION in contrib/cli/cli.h)" >&2; exit 1; }
	rm -rf $(RPM_TOPDIR)
	mkdir -p $(RPM_TOPDIR)/SOURCES $(RPM_TOPDIR)/SPECS
	tar --exclude=./build --exclude=./.git --exclude='./*.log' \
		--transform 's,^\.,restore-budget-$(VERSION),' \
		-czf $(RPM_TARBALL) .
	sed 's/^Version:.*/Version:        $(VERSION)/' contrib/packaging/restore-budget.spec \
		>$(RPM_TOPDIR)/SPECS/restore-budget.spec
	rpmbuild -bb --define '_topdir $(RPM_TOPDIR)' $(RPM_DEFINES) $(RPMBUILD_FLAGS) \
		$(RPM_TOPDIR)/SPECS/restore-budget.spec
	@echo "rpm: $(RPM_FILE)"

# The .rpm's path, for scripts: make -s rpm-name
rpm-name:
	@echo $(RPM_FILE)

packaging-test: all
	tests/packaging/deb.sh

# Its own build dir: never races packaging-test's build/deb or a leg's tree.
packaging-lint:
	tests/packaging/lint.sh

TEST_EXTRA += packaging-test packaging-lint
