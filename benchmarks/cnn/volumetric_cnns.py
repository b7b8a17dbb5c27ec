"""3-D (volumetric) CNNs of scripts/bench_cnn.sh --models volumetric (group "volumetric" of
cnn_models.py; only when named): a C3D-like video classifier (Conv3d + BatchNorm3d + ReLU,
MaxPool3d, a 16-frame 112x112 clip cut to 8 frames of 56x56 so the benchmark stays short) and a
3-D U-Net (ConvTranspose3d up-sampling, skip concats) on a 16x48x48 volume and (session 26) an
r3d_18-style video ResNet (residual sums) and an X3D-style net (depthwise 3-D convs), the
architectures nn.Conv3d users bring (graphi ran none before session 25)."""
import torch
import torch.nn.functional as F
from torch import nn


def conv_bn_relu(a, b):
    return nn.Sequential(nn.Conv3d(a, b, 3, padding=1, bias=False), nn.BatchNorm3d(b), nn.ReLU())


class C3dLike(nn.Module):
    def __init__(self, classes=101):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn_relu(3, 32), nn.MaxPool3d((1, 2, 2)),
            conv_bn_relu(32, 64), nn.MaxPool3d(2),
            conv_bn_relu(64, 128), conv_bn_relu(128, 128), nn.MaxPool3d(2),
            conv_bn_relu(128, 256), nn.MaxPool3d(2))
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool3d(self.features(x), 1).flatten(1))


class UNet3dLike(nn.Module):
    def __init__(self):
        super().__init__()

        def block(a, b):
            return nn.Sequential(conv_bn_relu(a, b), conv_bn_relu(b, b))
        self.e1, self.e2, self.e3 = block(1, 8), block(8, 16), block(16, 32)
        self.u2 = nn.ConvTranspose3d(32, 16, 2, 2)
        self.d2 = block(32, 16)
        self.u1 = nn.ConvTranspose3d(16, 8, 2, 2)
        self.d1 = block(16, 8)
        self.out = nn.Conv3d(8, 3, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(F.max_pool3d(a, 2))
        c = self.e3(F.max_pool3d(b, 2))
        d = self.d2(torch.cat([self.u2(c), b], 1))
        return self.out(self.d1(torch.cat([self.u1(d), a], 1)))


class BasicBlock3d(nn.Module):
    """torchvision's video ResNet block (r3d_18): two 3x3x3 conv + BN, the shortcut added
    before the last ReLU (a 1x1x1 strided conv + BN where the shape changes)."""

    def __init__(self, a, b, stride):
        super().__init__()
        self.c1 = conv_bn_relu(a, b) if stride == 1 else nn.Sequential(
            nn.Conv3d(a, b, 3, stride, 1, bias=False), nn.BatchNorm3d(b), nn.ReLU())
        self.c2 = nn.Sequential(nn.Conv3d(b, b, 3, padding=1, bias=False), nn.BatchNorm3d(b))
        self.down = None if stride == 1 and a == b else nn.Sequential(
            nn.Conv3d(a, b, 1, stride, bias=False), nn.BatchNorm3d(b))

    def forward(self, x):
        return F.relu(self.c2(self.c1(x)) + (x if self.down is None else self.down(x)))


class R3dLike(nn.Module):
    """An r3d_18-style video ResNet (torchvision.models.video.r3d_18's layout: a 3x7x7 stem,
    four stages of two BasicBlock3d), half its widths, on 8 frames of 56x56."""

    def __init__(self, classes=101):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 32, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(32), nn.ReLU())
        widths, layers, a = [32, 64, 128, 256], [], 32
        for i, b in enumerate(widths):
            layers += [BasicBlock3d(a, b, 1 if i == 0 else 2), BasicBlock3d(b, b, 1)]
            a = b
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool3d(self.layers(self.stem(x)), 1).flatten(1))


class X3dBlock(nn.Module):
    """X3D's bottleneck: 1x1x1 expand + BN + ReLU, 3x3x3 depthwise + BN + ReLU, 1x1x1 project +
    BN, the input added (strided blocks down-sample in the depthwise conv, no shortcut)."""

    def __init__(self, a, e, b, stride):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv3d(a, e, 1, bias=False), nn.BatchNorm3d(e), nn.ReLU(),
            nn.Conv3d(e, e, 3, (1, stride, stride), 1, groups=e, bias=False), nn.BatchNorm3d(e),
            nn.ReLU(), nn.Conv3d(e, b, 1, bias=False), nn.BatchNorm3d(b))
        self.residual = stride == 1 and a == b

    def forward(self, x):
        y = self.f(x)
        return F.relu(x + y) if self.residual else y


class X3dLike(nn.Module):
    """An X3D-S-style efficient video net (depthwise 3x3x3 convs, expansion 2.25), four stages of
    two blocks, on 8 frames of 112x112."""

    def __init__(self, classes=101):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 24, (1, 3, 3), (1, 2, 2), (0, 1, 1), bias=False),
                                  nn.BatchNorm3d(24), nn.ReLU())
        blocks, a = [], 24
        for b in [24, 48, 96, 192]:
            e = b * 9 // 4
            blocks += [X3dBlock(a, e, b, 2), X3dBlock(b, e, b, 1)]
            a = b
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(192, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool3d(self.blocks(self.stem(x)), 1).flatten(1))


def models():
    """name -> (make module, per-sample input shape)."""
    return {
        "c3d_like": (C3dLike, (3, 8, 56, 56)),
        "unet3d_like": (UNet3dLike, (1, 16, 48, 48)),
        "r3d_like": (R3dLike, (3, 8, 56, 56)),
        "x3d_like": (X3dLike, (3, 8, 112, 112)),
    }
