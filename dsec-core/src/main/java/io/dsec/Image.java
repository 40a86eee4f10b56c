package io.dsec;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * A sandbox image: three independently versioned layers composed at creation. The root filesystem is the
 * workspace over the base; the toolkit is mounted read-only at its own path. An image restored from a snapshot also
 * has the snapshot's diff chain, laid over the workspace.
 *
 * @param base      the operating system layer (required)
 * @param workspace the task layer laid over the base, or null for none
 * @param toolkit   the read-only tools layer, or null for none
 * @param diffs     snapshot diffs over the workspace, oldest first; empty for a fresh image
 */
public record Image(Layer base, Layer workspace, Layer toolkit, List<Layer> diffs) {
    public Image {
        expect("image.base", base, LayerKind.BASE, false);
        expect("image.workspace", workspace, LayerKind.WORKSPACE, true);
        expect("image.toolkit", toolkit, LayerKind.TOOLKIT, true);
        diffs = List.copyOf(diffs);
        for (Layer diff : diffs) {
            expect("image.diffs", diff, LayerKind.DIFF, false);
        }
    }

    public Image(Layer base, Layer workspace, Layer toolkit) {
        this(base, workspace, toolkit, List.of());
    }

    /** This image with {@code diff} laid over everything it has: what a snapshot of a sandbox of this image restores. */
    public Image withDiff(Layer diff) {
        List<Layer> next = new ArrayList<>(diffs);
        next.add(diff);
        return new Image(base, workspace, toolkit, next);
    }

    /** This image with its diff chain replaced (a squashed chain, for one). */
    public Image withDiffs(List<Layer> chain) {
        return new Image(base, workspace, toolkit, chain);
    }

    public static Image of(Layer base) {
        return new Image(base, null, null);
    }

    public static Image of(Layer base, Layer workspace) {
        return new Image(base, workspace, null);
    }

    public static Image of(Layer base, Layer workspace, Layer toolkit) {
        return new Image(base, workspace, toolkit);
    }

    /** This image with another workspace; base, toolkit and diffs stay as they are. */
    public Image withWorkspace(Layer newWorkspace) {
        return new Image(base, newWorkspace, toolkit, diffs);
    }

    /** This image with another toolkit; base, workspace and diffs stay as they are. */
    public Image withToolkit(Layer newToolkit) {
        return new Image(base, workspace, newToolkit, diffs);
    }

    public Optional<Layer> workspaceLayer() {
        return Optional.ofNullable(workspace);
    }

    public Optional<Layer> toolkitLayer() {
        return Optional.ofNullable(toolkit);
    }

    /** The layers of the root filesystem, uppermost first (overlayfs lowerdir order): diffs newest first, workspace, base. */
    public List<Layer> rootLayersTopDown() {
        List<Layer> layers = new ArrayList<>(2 + diffs.size());
        for (int i = diffs.size() - 1; i >= 0; i--) {
            layers.add(diffs.get(i));
        }
        if (workspace != null) {
            layers.add(workspace);
        }
        layers.add(base);
        return Collections.unmodifiableList(layers);
    }

    /** Every layer of the image, base first. */
    public List<Layer> layers() {
        List<Layer> layers = new ArrayList<>(3);
        layers.add(base);
        if (workspace != null) {
            layers.add(workspace);
        }
        if (toolkit != null) {
            layers.add(toolkit);
        }
        layers.addAll(diffs);
        return Collections.unmodifiableList(layers);
    }

    private static void expect(String field, Layer layer, LayerKind kind, boolean optional) {
        if (layer == null) {
            if (!optional) {
                throw new InvalidSpecException(field, null, "an image needs a " + kind + " layer: build one with host.layers().fromDirectory(LayerKind." + kind + ", ...)");
            }
            return;
        }
        if (layer.kind() != kind) {
            throw new InvalidSpecException(field, layer.reference() + " (" + layer.kind() + ")",
                "this position takes a " + kind + " layer; build the layer with LayerKind." + kind);
        }
    }
}
