package io.dsec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class SandboxSpecTest {
    private static final String HEX = "a".repeat(64);
    private final Layer base = new Layer(LayerKind.BASE, "debian-12", "1", "sha256:" + HEX, 2 << 20);
    private final Layer workspace = new Layer(LayerKind.WORKSPACE, "repo", "1", "sha256:" + "b".repeat(64), 2 << 20);
    private final Layer toolkit = new Layer(LayerKind.TOOLKIT, "harness", "1", "sha256:" + "c".repeat(64), 2 << 20);

    @Test
    void parsesSizesInPowersOf1024() {
        assertThat(SandboxSpec.parseSize("f", "2g")).isEqualTo(2L << 30);
        assertThat(SandboxSpec.parseSize("f", "512M")).isEqualTo(512L << 20);
        assertThat(SandboxSpec.parseSize("f", "2GiB")).isEqualTo(2L << 30);
        assertThat(SandboxSpec.parseSize("f", "4096")).isEqualTo(4096);
    }

    @Test
    void rejectsBadSizesNamingFieldValueAndFix() {
        assertThatThrownBy(() -> SandboxSpec.of(Image.of(base)).memory("lots"))
            .isInstanceOf(InvalidSpecException.class)
            .hasMessageContaining("spec.memory").hasMessageContaining("\"lots\"").hasMessageContaining("512m");
        assertThatThrownBy(() -> SandboxSpec.of(Image.of(base)).memory("1k"))
            .isInstanceOf(InvalidSpecException.class).hasMessageContaining("at least 8m");
    }

    @Test
    void specIsImmutable() {
        SandboxSpec a = SandboxSpec.of(Image.of(base));
        SandboxSpec b = a.memory("4g").cpus(2).env("K", "V").label("task", "t1");
        assertThat(a.memoryBytes()).isEqualTo(SandboxSpec.DEFAULT_MEMORY_BYTES);
        assertThat(a.env()).isEmpty();
        assertThat(b.memoryBytes()).isEqualTo(4L << 30);
        assertThat(b.cpus()).isEqualTo(2.0);
        assertThat(b.env()).containsEntry("K", "V");
        assertThat(b.labels()).containsEntry("task", "t1");
        assertThat(b.network()).isEqualTo(NetworkPolicy.NONE);
    }

    @Test
    void rejectsBadValues() {
        SandboxSpec s = SandboxSpec.of(Image.of(base));
        assertThatThrownBy(() -> s.cpus(0)).hasMessageContaining("spec.cpus = 0.0");
        assertThatThrownBy(() -> s.pids(1)).hasMessageContaining("spec.pids = 1");
        assertThatThrownBy(() -> s.hostname("-bad")).hasMessageContaining("spec.hostname = -bad");
        assertThatThrownBy(() -> s.workdir("repo")).hasMessageContaining("spec.workdir = repo");
        assertThatThrownBy(() -> s.env("1X", "v")).hasMessageContaining("env name = 1X");
        assertThatThrownBy(() -> SandboxSpec.of(null)).hasMessageContaining("spec.image");
    }

    @Test
    void imageChecksLayerKinds() {
        assertThat(Image.of(base, workspace, toolkit).rootLayersTopDown()).containsExactly(workspace, base);
        assertThatThrownBy(() -> Image.of(workspace))
            .isInstanceOf(InvalidSpecException.class)
            .hasMessageContaining("image.base").hasMessageContaining("WORKSPACE").hasMessageContaining("LayerKind.BASE");
        assertThatThrownBy(() -> Image.of(base, toolkit)).hasMessageContaining("image.workspace");
        assertThat(Image.of(base).withToolkit(toolkit).toolkitLayer()).contains(toolkit);
    }

    @Test
    void layerReferencesAreChecked() {
        assertThat(Layer.parseReference("debian-12")).containsExactly("debian-12", "latest");
        assertThat(Layer.parseReference("debian-12:2026.11")).containsExactly("debian-12", "2026.11");
        assertThatThrownBy(() -> Layer.parseReference("Debian 12")).hasMessageContaining("layer.name = Debian 12");
        assertThatThrownBy(() -> new Layer(LayerKind.BASE, "x", "1", "md5:00", 1)).hasMessageContaining("layer.digest");
    }

    @Test
    void execValidatesAndStaysImmutable() {
        Exec e = Exec.shell("pytest -q");
        Exec t = e.timeout(Duration.ofMinutes(5)).env("K", "V").workdir("/repo");
        assertThat(e.argv()).containsExactly("/bin/sh", "-c", "pytest -q");
        assertThat(e.env()).isEmpty();
        assertThat(t.timeout()).isEqualTo(Duration.ofMinutes(5));
        assertThat(t.workdir()).isEqualTo("/repo");
        assertThatThrownBy(() -> Exec.of()).hasMessageContaining("exec.argv");
        assertThatThrownBy(() -> e.workdir("repo")).hasMessageContaining("exec.workdir = repo");
        assertThatThrownBy(() -> e.timeout(Duration.ofSeconds(-1))).hasMessageContaining("exec.timeout");
        assertThatThrownBy(() -> e.maxOutputBytes(1)).hasMessageContaining("exec.maxOutputBytes = 1");
    }

    @Test
    void builderRejectsBadSettingsAtOnce() {
        assertThatThrownBy(() -> Sandboxes.builder().toolkitPath("/proc/x")).hasMessageContaining("toolkitPath = /proc/x");
        assertThatThrownBy(() -> Sandboxes.builder().stateDir(java.nio.file.Path.of("/"))).hasMessageContaining("stateDir");
        assertThatThrownBy(() -> Sandboxes.builder().agentStartTimeout(Duration.ZERO)).hasMessageContaining("agentStartTimeout = PT0S");
        assertThatThrownBy(() -> WriteOptions.mode(010000)).hasMessageContaining("write.mode = 10000");
    }
}
